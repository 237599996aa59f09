// EventLoop: the service thread. One epoll instance, a FIFO of tasks, and
// timers.
//
// sluiced runs one EventLoop on its main thread; `sluice record` runs one on a
// thread of its own (EventLoopThread). Socket I/O, timers (duration, periodic
// flush and file writes, flush timeouts) and every call the service makes
// into producers and consumers run on this thread. See docs/SERVICE.md,
// "Threads".
//
// Thread-safety: PostTask, PostDelayedTask, Quit and RunsTasksOnCurrentThread
// may be called from any thread. Fd watches are added and removed on the loop
// thread only (or before Run() starts). Tasks run in the order posted; a
// delayed task runs no earlier than its delay, after tasks posted before its
// deadline passed.
#ifndef SLUICE_SERVICE_EVENT_LOOP_H_
#define SLUICE_SERVICE_EVENT_LOOP_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sluice {

class EventLoop {
 public:
  using Task = std::function<void()>;
  // Called with the epoll event bits (EPOLLIN, EPOLLOUT, EPOLLHUP, ...).
  using FdCallback = std::function<void(uint32_t events)>;

  EventLoop();
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Runs until Quit(). The calling thread becomes the loop thread.
  void Run();
  // Runs the tasks that are ready now (not future timers) and returns.
  // For tests and fuzzers that drive a loop without a thread.
  void RunUntilIdle();
  void Quit();

  void PostTask(Task task);
  // Returns the timer's id (never 0), for CancelDelayedTask.
  uint64_t PostDelayedTask(Task task, uint32_t delay_ms);
  // Drops a delayed task that has not run yet, so that its deadline no
  // longer wakes the loop (a flush's timeout once the flush is done: at
  // rest that was a wake-up per flush round for nothing). An id that ran
  // or was cancelled already is ignored.
  void CancelDelayedTask(uint64_t id);

  // Loop thread only. `events` as for epoll_ctl (EPOLLIN | EPOLLOUT ...).
  // The callback may remove its own or any other watch.
  void AddFdWatch(int fd, uint32_t events, FdCallback callback);
  void SetFdWatchEvents(int fd, uint32_t events);
  void RemoveFdWatch(int fd);

  // True on the thread inside Run() / RunUntilIdle(), or on any thread
  // before the loop first ran.
  bool RunsTasksOnCurrentThread() const;
  // True while Run() is executing.
  bool running() const { return running_.load(std::memory_order_acquire); }

  // How many times Run() woke (for a task, a timer or I/O). Loop thread
  // only: periodic housekeeping uses it to back off while nothing else
  // happens, so that an idle daemon is not woken for nothing.
  uint64_t rounds() const { return rounds_; }

  // Loop thread only. Runs `task` once, first thing in the next round the
  // loop wakes for (a task, a timer or I/O), not in the current one:
  // housekeeping that found nothing to do waits for the next work this way,
  // not on a timer that would wake an idle loop for nothing.
  void RunOnNextRound(Task task);

  // How long epoll_wait may sleep with the next timer `until` away: whole
  // milliseconds rounded up, so that the timer is due when it wakes. Not
  // capped below what epoll_wait takes: a loop whose next work is five
  // minutes away sleeps five minutes (a one-minute cap woke an idle service
  // four times between two flush rounds). Public for tests.
  static int WaitTimeoutMs(std::chrono::nanoseconds until);

  // Runs `fn` on the loop thread and waits for it; runs it right here when
  // called on the loop thread or when the loop is not running.
  void RunAndWait(const std::function<void()>& fn);

 private:
  using Clock = std::chrono::steady_clock;
  // Ordered by deadline, then by id: FIFO among equal deadlines.
  using DelayedKey = std::pair<Clock::time_point, uint64_t>;
  struct Watch {
    uint64_t generation;
    FdCallback callback;
  };

  void Wake();
  // Moves due timers to the ready queue; returns ms until the next timer
  // (-1: none).
  int PromoteDueTimers();
  void RunReadyTasks();
  void RunNextRoundTasks();
  void PollOnce(int timeout_ms);

  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd
  std::atomic<bool> quit_{false};
  std::atomic<bool> running_{false};
  std::atomic<std::thread::id> loop_thread_{};

  std::mutex mu_;  // Guards the two queues below.
  std::deque<Task> ready_;
  std::map<DelayedKey, Task> delayed_;
  std::unordered_map<uint64_t, Clock::time_point> delayed_deadlines_;  // By id: for cancelling.
  uint64_t next_timer_id_ = 1;

  // Loop thread only.
  uint64_t rounds_ = 0;
  std::vector<Task> next_round_;
  std::map<int, Watch> watches_;
  uint64_t next_generation_ = 1;
};

// Runs an EventLoop on a thread of its own; quits and joins on destruction.
// Tasks still queued at that point are dropped.
class EventLoopThread {
 public:
  EventLoopThread();
  ~EventLoopThread();
  EventLoop* loop() { return &loop_; }

 private:
  EventLoop loop_;
  std::thread thread_;
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_EVENT_LOOP_H_
