#include "shm/base/wake_fd.h"

#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <thread>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(WakeFdTest, WakesAddUpUntilDrained) {
  auto wake = WakeFd::Create();
  ASSERT_TRUE(wake.ok()) << wake.status().message();
  EXPECT_FALSE(wake->Wait(0));
  wake->Wake();
  wake->Wake();
  EXPECT_TRUE(wake->Wait(0));   // Both at once.
  EXPECT_FALSE(wake->Wait(0));  // Drained.
  EXPECT_FALSE(wake->Drain());
}

TEST(WakeFdTest, AnotherThreadWakesAWaitWithoutTimeout) {
  auto wake = WakeFd::Create();
  ASSERT_TRUE(wake.ok());
  std::thread waker([&] { wake->Wake(); });
  EXPECT_TRUE(wake->Wait(-1));
  waker.join();
}

// The other fd is reported, and left for its owner to drain; this one's
// wake-up is taken when it alone is set.
TEST(WakeFdTest, WaitWithTellsTheOtherFdApart) {
  auto wake = WakeFd::Create();
  auto other = WakeFd::Create();
  ASSERT_TRUE(wake.ok() && other.ok());
  EXPECT_EQ(wake->WaitWith(other->fd(), 0), WakeFd::WaitResult::kTimeout);
  other->Wake();
  EXPECT_EQ(wake->WaitWith(other->fd(), 0), WakeFd::WaitResult::kOther);
  EXPECT_EQ(wake->WaitWith(other->fd(), 0), WakeFd::WaitResult::kOther);  // Not drained.
  EXPECT_TRUE(other->Drain());
  wake->Wake();
  EXPECT_EQ(wake->WaitWith(other->fd(), 0), WakeFd::WaitResult::kWoken);
  EXPECT_EQ(wake->WaitWith(-1, 0), WakeFd::WaitResult::kTimeout);  // Drained; no other fd.
}

// What the recorders do: a signal handler wakes the fd (one write(2), which
// is async-signal-safe).
const WakeFd* g_signal_wake = nullptr;
void WakeFromHandler(int) { g_signal_wake->Wake(); }

TEST(WakeFdTest, ASignalHandlerWakesIt) {
  auto wake = WakeFd::Create();
  ASSERT_TRUE(wake.ok());
  g_signal_wake = &wake.value();
  struct sigaction sa {}, old {};
  sa.sa_handler = WakeFromHandler;
  ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
  ASSERT_EQ(raise(SIGUSR2), 0);
  EXPECT_TRUE(wake->Wait(-1));
  sigaction(SIGUSR2, &old, nullptr);
  g_signal_wake = nullptr;
}

}  // namespace
}  // namespace sluice
