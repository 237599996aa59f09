#include "user/probes/flush_room_wait.h"

#include <chrono>
#include <thread>

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

// One patience serves a whole flush round (every CPU's read in turn): a
// shortage after reads that took data is a new one, however long ago the
// first shortage was.
TEST(FlushRoomWaitTest, AReadThatTookDataStartsANewPatience) {
  FlushRoomWait wait(milliseconds(50));
  EXPECT_TRUE(wait.KeepWaiting(false));  // CPU 0 finds no room...
  std::this_thread::sleep_for(milliseconds(60));  // ...then reads for longer than the patience.
  wait.NoteProgress();
  EXPECT_TRUE(wait.KeepWaiting(false)) << "CPU 1's first shortage gave up at once";
}

}  // namespace
}  // namespace sluice
