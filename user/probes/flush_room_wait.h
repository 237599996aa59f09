// FlushRoomWait: how long a flush waits for room in a full SMB.
//
// Between flushes the readers (ftrace's per-CPU workers, the BPF reader)
// take from the kernel only what their writers have room for, and otherwise
// wait: a full SMB then leaves the loss to the kernel, which counts it per
// CPU in events, where going on would drop whole encoded bundles in the SMB,
// counted only as packets. A flush (and a source's final read) waits in the
// same way, but it must end. So it waits as long as the service keeps
// freeing room, and once the SMB has had no room for `patience` in a row, it
// writes the rest anyway and the writer's own policy (stall, then drop and
// count) applies to what does not fit. A service that frees nothing for that
// long has stopped or is gone.
//
// Why wait at all in a flush: a stop reads what the kernel buffers hold, up
// to their whole size, through an SMB that may be full at that moment. The
// writer's stall (ArbiterOptions::stall_timeout_ms, 100 ms) is too short for
// a service that is busy but alive: in a QEMU guest under TCG a flush after
// the service stood still dropped a bundle in 1 of 20 runs.
//
// One object per flush; not thread-safe (the reading thread's alone).
#ifndef SLUICE_USER_PROBES_FLUSH_ROOM_WAIT_H_
#define SLUICE_USER_PROBES_FLUSH_ROOM_WAIT_H_

#include <chrono>
#include <optional>

namespace sluice {

class FlushRoomWait {
 public:
  static constexpr std::chrono::milliseconds kDefaultPatience{1000};

  explicit FlushRoomWait(std::chrono::milliseconds patience = kDefaultPatience) : patience_(patience) {}

  // After a read of the flush found no room. `took_data`: that read took
  // something before it ran out, so the service had freed room since the
  // last call. Returns true to wait and ask again; false once there has been
  // no room for the whole patience, and from then on for this flush: the
  // caller writes the rest without asking.
  bool KeepWaiting(bool took_data);
  // After a read of the flush that took data, whatever it ended on: the
  // service freed room, so the next shortage starts a patience of its own.
  // Without it a shortage long after the last one (another CPU's read in
  // the same round, after this one read for seconds) counted the time since
  // that first one, and the flush gave up at once.
  void NoteProgress() { waiting_since_.reset(); }

 private:
  using Clock = std::chrono::steady_clock;
  const std::chrono::milliseconds patience_;
  std::optional<Clock::time_point> waiting_since_;
  bool gave_up_ = false;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FLUSH_ROOM_WAIT_H_
