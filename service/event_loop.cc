#include "service/event_loop.h"

#include <errno.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace sluice {
namespace {
constexpr int kMaxEventsPerPoll = 64;

uint64_t PackWatch(int fd, uint64_t generation) {
  return (generation << 32) | static_cast<uint32_t>(fd);
}
}  // namespace

EventLoop::EventLoop() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd_ < 0 || wake_fd_ < 0) {
    // Out of fds at start-up: nothing sensible to continue with.
    perror("sluice: cannot create the service event loop (epoll/eventfd)");
    abort();
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = PackWatch(wake_fd_, 0);
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
}

EventLoop::~EventLoop() {
  close(wake_fd_);
  close(epoll_fd_);
}

bool EventLoop::RunsTasksOnCurrentThread() const {
  std::thread::id id = loop_thread_.load(std::memory_order_acquire);
  return id == std::thread::id() || id == std::this_thread::get_id();
}

void EventLoop::Wake() {
  // The loop thread itself is not in epoll_wait: it computes its next
  // timeout from both queues before it waits again, so a task it posts
  // needs no wake-up. Writing one anyway cost an idle daemon a second
  // round for each of its timers (a housekeeping timer that re-posts
  // itself woke the loop twice).
  if (loop_thread_.load(std::memory_order_acquire) == std::this_thread::get_id()) return;
  uint64_t one = 1;
  ssize_t r = write(wake_fd_, &one, sizeof(one));
  (void)r;  // EAGAIN: the counter is already non-zero, the loop will wake.
}

void EventLoop::PostTask(Task task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back(std::move(task));
  }
  Wake();
}

uint64_t EventLoop::PostDelayedTask(Task task, uint32_t delay_ms) {
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_timer_id_++;
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(delay_ms);
    delayed_.emplace(DelayedKey{deadline, id}, std::move(task));
    delayed_deadlines_.emplace(id, deadline);
  }
  Wake();
  return id;
}

void EventLoop::CancelDelayedTask(uint64_t id) {
  Task dropped;  // Destroyed outside the lock: its captures may post tasks.
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = delayed_deadlines_.find(id);
    if (it == delayed_deadlines_.end()) return;
    auto task = delayed_.find(DelayedKey{it->second, id});
    dropped = std::move(task->second);
    delayed_.erase(task);
    delayed_deadlines_.erase(it);
  }
  // No wake-up: a loop waiting for the cancelled deadline wakes once for
  // nothing, which is what a Wake() would cost too.
}

void EventLoop::Quit() {
  quit_.store(true, std::memory_order_release);
  Wake();
}

void EventLoop::AddFdWatch(int fd, uint32_t events, FdCallback callback) {
  uint64_t generation = next_generation_++ & 0xffffffffu;
  watches_[fd] = Watch{generation, std::move(callback)};
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = PackWatch(fd, generation);
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST)
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
}

void EventLoop::SetFdWatchEvents(int fd, uint32_t events) {
  auto it = watches_.find(fd);
  if (it == watches_.end()) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = PackWatch(fd, it->second.generation);
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev);
}

void EventLoop::RemoveFdWatch(int fd) {
  if (watches_.erase(fd) == 0) return;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

int EventLoop::PromoteDueTimers() {
  std::lock_guard<std::mutex> lock(mu_);
  auto now = Clock::now();
  while (!delayed_.empty() && delayed_.begin()->first.first <= now) {
    auto first = delayed_.begin();
    ready_.push_back(std::move(first->second));
    delayed_deadlines_.erase(first->first.second);
    delayed_.erase(first);
  }
  if (!ready_.empty()) return 0;
  if (delayed_.empty()) return -1;
  return WaitTimeoutMs(delayed_.begin()->first.first - now);
}

int EventLoop::WaitTimeoutMs(std::chrono::nanoseconds until) {
  // PostDelayedTask's uint32_t milliseconds reach 49 days; an int, 24.
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(until).count();
  return ms > std::numeric_limits<int>::max() ? std::numeric_limits<int>::max() : static_cast<int>(ms);
}

void EventLoop::RunOnNextRound(Task task) { next_round_.push_back(std::move(task)); }

void EventLoop::RunNextRoundTasks() {
  if (next_round_.empty()) return;
  std::vector<Task> now;
  now.swap(next_round_);  // What these register waits for the round after.
  for (Task& t : now) t();
}

void EventLoop::RunReadyTasks() {
  // Run only what is queued now; tasks posted by these tasks wait for the
  // next round so that I/O is not starved.
  std::deque<Task> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(ready_);
  }
  for (Task& t : batch) {
    if (quit_.load(std::memory_order_acquire)) break;
    t();
  }
}

void EventLoop::PollOnce(int timeout_ms) {
  epoll_event events[kMaxEventsPerPoll];
  int n = epoll_wait(epoll_fd_, events, kMaxEventsPerPoll, timeout_ms);
  for (int i = 0; i < n; i++) {
    int fd = static_cast<int>(events[i].data.u64 & 0xffffffffu);
    uint64_t generation = events[i].data.u64 >> 32;
    if (fd == wake_fd_ && generation == 0) {
      uint64_t v;
      ssize_t r = read(wake_fd_, &v, sizeof(v));
      (void)r;
      continue;
    }
    // A callback earlier in this batch may have removed (or replaced) the
    // watch: the generation tells.
    auto it = watches_.find(fd);
    if (it == watches_.end() || it->second.generation != generation) continue;
    FdCallback cb = it->second.callback;  // Copy: the callback may remove itself.
    cb(events[i].events);
  }
}

void EventLoop::Run() {
  loop_thread_.store(std::this_thread::get_id(), std::memory_order_release);
  running_.store(true, std::memory_order_release);
  while (!quit_.load(std::memory_order_acquire)) {
    int timeout = PromoteDueTimers();
    PollOnce(timeout);
    rounds_++;
    RunNextRoundTasks();
    PromoteDueTimers();
    RunReadyTasks();
  }
  running_.store(false, std::memory_order_release);
}

void EventLoop::RunAndWait(const std::function<void()>& fn) {
  if (RunsTasksOnCurrentThread() || !running()) {
    fn();
    return;
  }
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  PostTask([&] {
    fn();
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(mu);
  // If the loop quits before running the task, give up after a while rather
  // than hang (the task is then dropped).
  while (!done && running()) cv.wait_for(lock, std::chrono::milliseconds(100));
}

void EventLoop::RunUntilIdle() {
  loop_thread_.store(std::this_thread::get_id(), std::memory_order_release);
  for (int round = 0; round < 1000; round++) {
    PromoteDueTimers();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ready_.empty()) break;
    }
    RunNextRoundTasks();
    RunReadyTasks();
  }
  PollOnce(0);
  loop_thread_.store(std::thread::id(), std::memory_order_release);
}

EventLoopThread::EventLoopThread()
    : thread_([this] {
        pthread_setname_np(pthread_self(), "sluice-service");
        loop_.Run();
      }) {
  // Wait until the loop thread owns the loop, so that RunsTasksOnCurrentThread
  // is false on every other thread from now on.
  std::mutex mu;
  std::condition_variable cv;
  bool running = false;
  loop_.PostTask([&] {
    std::lock_guard<std::mutex> lock(mu);
    running = true;
    cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return running; });
}

EventLoopThread::~EventLoopThread() {
  loop_.Quit();
  thread_.join();
}

}  // namespace sluice
