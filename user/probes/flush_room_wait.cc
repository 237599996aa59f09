#include "user/probes/flush_room_wait.h"

namespace sluice {

bool FlushRoomWait::KeepWaiting(bool took_data) {
  if (gave_up_) return false;
  const Clock::time_point now = Clock::now();
  if (took_data || !waiting_since_) waiting_since_ = now;
  if (now - *waiting_since_ >= patience_) gave_up_ = true;
  return !gave_up_;
}

}  // namespace sluice
