#include "service/event_loop.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <future>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(EventLoopTest, TasksRunInOrder) {
  EventLoopThread thread;
  std::vector<int> order;
  std::promise<void> done;
  for (int i = 0; i < 100; i++) thread.loop()->PostTask([&order, i] { order.push_back(i); });
  thread.loop()->PostTask([&] { done.set_value(); });
  done.get_future().wait();
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; i++) EXPECT_EQ(order[i], i);
}

TEST(EventLoopTest, DelayedTasksRunAfterTheirDelay) {
  EventLoopThread thread;
  auto t0 = std::chrono::steady_clock::now();
  std::promise<std::chrono::steady_clock::time_point> later, sooner;
  thread.loop()->PostDelayedTask([&] { later.set_value(std::chrono::steady_clock::now()); }, 80);
  thread.loop()->PostDelayedTask([&] { sooner.set_value(std::chrono::steady_clock::now()); }, 20);
  auto t_sooner = sooner.get_future().get();
  auto t_later = later.get_future().get();
  EXPECT_GE(t_sooner - t0, std::chrono::milliseconds(20));
  EXPECT_GE(t_later - t0, std::chrono::milliseconds(80));
  EXPECT_LT(t_sooner, t_later);
}

// A task the loop thread posts for itself needs no wake-up through the
// eventfd: the loop takes its next timeout from the queues before it waits.
// So a timer that re-posts itself costs one round each time, not two (an
// idle daemon's housekeeping timer woke it twice per period).
TEST(EventLoopTest, TasksPostedOnTheLoopThreadCostOneRoundEach) {
  EventLoopThread thread;
  EventLoop* loop = thread.loop();
  std::promise<uint64_t> rounds;
  uint64_t first = 0;
  std::function<void(int)> chain = [&](int left) {
    if (left == 5) first = loop->rounds();
    if (left == 0) {
      rounds.set_value(loop->rounds() - first);
      return;
    }
    loop->PostDelayedTask([&chain, left] { chain(left - 1); }, 2);
  };
  loop->PostTask([&] { chain(5); });
  // Five timers: five rounds, and a little slack for a timer seen a
  // moment before its deadline (another round). Woken by the eventfd as
  // well, it took ten.
  EXPECT_LE(rounds.get_future().get(), 8u);
}

// A cancelled timer neither runs nor wakes the loop: a flush's timeout is
// cancelled when the flush completes, and at rest it had cost the service a
// wake-up each flush round.
TEST(EventLoopTest, ACancelledDelayedTaskNeitherRunsNorWakesTheLoop) {
  EventLoopThread thread;
  EventLoop* loop = thread.loop();
  std::atomic<bool> cancelled_ran{false};
  std::promise<uint64_t> rounds;
  uint64_t first = 0;
  loop->RunAndWait([&] {
    first = loop->rounds();
    const uint64_t id = loop->PostDelayedTask([&] { cancelled_ran = true; }, 10);
    EXPECT_NE(id, 0u);
    loop->CancelDelayedTask(id);
    loop->CancelDelayedTask(id);  // Twice: ignored.
    loop->PostDelayedTask([&] { rounds.set_value(loop->rounds() - first); }, 50);
  });
  // One round: the 50 ms timer's. The cancelled one would have made two.
  EXPECT_EQ(rounds.get_future().get(), 1u);
  EXPECT_FALSE(cancelled_ran);
}

// The wait for the next timer is its whole delay, rounded up to whole
// milliseconds: a five-minute flush period is one wake-up, not five (a
// one-minute cap woke an idle service in between).
TEST(EventLoopTest, TheLoopSleepsUntilItsNextTimerHoweverFar) {
  using std::chrono::nanoseconds;
  EXPECT_EQ(EventLoop::WaitTimeoutMs(nanoseconds(0)), 0);
  EXPECT_EQ(EventLoop::WaitTimeoutMs(nanoseconds(1)), 1);
  EXPECT_EQ(EventLoop::WaitTimeoutMs(std::chrono::minutes(5)), 300000);
  EXPECT_EQ(EventLoop::WaitTimeoutMs(std::chrono::hours(24 * 49)), std::numeric_limits<int>::max());
}

// RunOnNextRound's task runs once, first in the round after the one that
// asked for it: after a task posted later from another thread woke the
// loop, and before that task.
TEST(EventLoopTest, ATaskForTheNextRoundWaitsForTheLoopsNextWork) {
  EventLoopThread thread;
  EventLoop* loop = thread.loop();
  std::vector<std::string> order;  // Loop thread only.
  loop->RunAndWait([&] {
    loop->RunOnNextRound([&] { order.push_back("next round"); });
    order.push_back("asked");
  });
  std::promise<void> done;
  loop->PostTask([&] {
    order.push_back("work");
    done.set_value();
  });
  done.get_future().wait();
  loop->RunAndWait([&] { order.push_back("more work"); });
  EXPECT_EQ(order, (std::vector<std::string>{"asked", "next round", "work", "more work"}));
}

TEST(EventLoopTest, CancellingATimerThatRanIsIgnored) {
  EventLoopThread thread;
  std::promise<void> ran;
  const uint64_t id = thread.loop()->PostDelayedTask([&] { ran.set_value(); }, 1);
  ran.get_future().wait();
  thread.loop()->CancelDelayedTask(id);
  thread.loop()->CancelDelayedTask(12345);
  std::promise<void> still;
  thread.loop()->PostDelayedTask([&] { still.set_value(); }, 1);
  still.get_future().wait();
}

TEST(EventLoopTest, FdWatchAndRemovalFromItsCallback) {
  EventLoopThread thread;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::promise<char> got;
  thread.loop()->RunAndWait([&] {
    thread.loop()->AddFdWatch(fds[0], EPOLLIN, [&](uint32_t) {
      char c = 0;
      EXPECT_EQ(read(fds[0], &c, 1), 1);
      thread.loop()->RemoveFdWatch(fds[0]);
      got.set_value(c);
    });
  });
  ASSERT_EQ(write(fds[1], "k", 1), 1);
  EXPECT_EQ(got.get_future().get(), 'k');
  close(fds[0]);
  close(fds[1]);
}

TEST(EventLoopTest, RunsTasksOnCurrentThread) {
  EventLoopThread thread;
  EXPECT_FALSE(thread.loop()->RunsTasksOnCurrentThread());
  bool inside = false;
  thread.loop()->RunAndWait([&] { inside = thread.loop()->RunsTasksOnCurrentThread(); });
  EXPECT_TRUE(inside);
}

// The name shows in top -H, perf and /proc/<pid>/task/*/comm.
TEST(EventLoopTest, TheLoopThreadIsNamed) {
  EventLoopThread thread;
  std::string name;
  thread.loop()->RunAndWait([&] {
    char buf[16] = {};
    pthread_getname_np(pthread_self(), buf, sizeof(buf));
    name = buf;
  });
  EXPECT_EQ(name, "sluice-service");
}

TEST(EventLoopTest, RunUntilIdleWithoutAThread) {
  EventLoop loop;
  int n = 0;
  loop.PostTask([&] {
    n++;
    loop.PostTask([&] { n++; });
  });
  loop.RunUntilIdle();
  EXPECT_EQ(n, 2);
}

}  // namespace
}  // namespace sluice
