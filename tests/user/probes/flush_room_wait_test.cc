#include "user/probes/flush_room_wait.h"

#include <chrono>

#include <gtest/gtest.h>

namespace sluice {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;

TEST(FlushRoomWaitTest, WaitsWhileTheServiceFreesRoom) {
  FlushRoomWait wait(hours(1));
  EXPECT_TRUE(wait.KeepWaiting(false));
  EXPECT_TRUE(wait.KeepWaiting(false));
  EXPECT_TRUE(wait.KeepWaiting(true));
}

TEST(FlushRoomWaitTest, GivesUpOnceThereWasNoRoomForThePatienceAndStaysGivenUp) {
  FlushRoomWait wait(milliseconds(0));
  // With no patience the first shortage already gives up.
  EXPECT_FALSE(wait.KeepWaiting(false));
  // Room later does not bring the flush back to waiting: it writes the rest.
  EXPECT_FALSE(wait.KeepWaiting(true));
}

}  // namespace
}  // namespace sluice
