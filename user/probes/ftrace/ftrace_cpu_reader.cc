#include "user/probes/ftrace/ftrace_cpu_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace sluice {

void DrainSignal::Notify() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_ = true;
  }
  cv_.notify_one();
}

bool DrainSignal::WaitFor(uint32_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [this] { return pending_; });
  return std::exchange(pending_, false);
}

FtraceCpuReader::FtraceCpuReader(uint32_t cpu, const FtraceCpuReaderOptions& options,
                                 DrainSignal* signal)
    : cpu_(cpu),
      page_size_(options.page_size),
      pool_pages_(std::max<uint32_t>(options.pool_pages, 2)),
      splice_pages_(std::max<uint32_t>(options.splice_pages, 1)),
      poll_timeout_ms_(std::max<uint32_t>(options.poll_timeout_ms, 1)),
      busy_poll_timeout_ms_(
          std::clamp<uint32_t>(options.busy_poll_timeout_ms, 1, poll_timeout_ms_)),
      signal_(signal),
      pool_(new uint8_t[static_cast<size_t>(pool_pages_) * page_size_]) {
  if (options.start_paused) control_.SetPaused(true);
}

StatusOr<std::unique_ptr<FtraceCpuReader>> FtraceCpuReader::Create(
    uint32_t cpu, const std::string& trace_pipe_raw_path, const FtraceCpuReaderOptions& options,
    DrainSignal* signal) {
  if (options.page_size < 64 || options.page_size > (64u << 20)) {
    return Status::Error("implausible ftrace page size " + std::to_string(options.page_size));
  }
  std::unique_ptr<FtraceCpuReader> r(new FtraceCpuReader(cpu, options, signal));
  r->trace_fd_ = open(trace_pipe_raw_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (r->trace_fd_ < 0) {
    return Status::Error("cannot open " + trace_pipe_raw_path + " (" + std::strerror(errno) +
                         "): run sluice as root");
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Error(std::string("cannot create a pipe (") + std::strerror(errno) +
                         "): raise the open-files limit (ulimit -n)");
  }
  r->pipe_read_ = fds[0];
  r->pipe_write_ = fds[1];
  // The pipe must hold one splice() worth of sub-buffers. If it cannot hold
  // even one (pipe-max-size below the sub-buffer size), use read(2) only.
  const long want = static_cast<long>(r->splice_pages_) * r->page_size_;
  if (fcntl(r->pipe_write_, F_SETPIPE_SZ, want) < 0) {
    const long have = fcntl(r->pipe_write_, F_GETPIPE_SZ);
    r->splice_pages_ = have > 0 ? static_cast<uint32_t>(have / r->page_size_) : 0;
  }
  SLUICE_RETURN_IF_ERROR(r->control_.Open());
  return r;
}

FtraceCpuReader::~FtraceCpuReader() {
  StopThread();
  for (int fd : {trace_fd_, pipe_read_, pipe_write_}) {
    if (fd >= 0) close(fd);
  }
}

void FtraceCpuReader::StartThread() {
  if (!thread_.joinable()) thread_ = std::thread([this] { WorkerLoop(); });
}

void FtraceCpuReader::StopThread() {
  control_.RequestStop();
  if (thread_.joinable()) thread_.join();
}

FtraceCpuReader::Run FtraceCpuReader::NextReady() const {
  // Acquire pairs with the worker's release store of head_: the page bytes
  // written before it are visible.
  const uint64_t head = head_.load(std::memory_order_acquire);
  const uint64_t tail = tail_.load(std::memory_order_relaxed);  // Our own.
  if (head == tail) return {};
  const uint64_t index = tail % pool_pages_;
  const uint64_t count = std::min<uint64_t>(head - tail, pool_pages_ - index);
  return {Slot(tail), static_cast<size_t>(count)};
}

void FtraceCpuReader::Release(size_t count) {
  const uint64_t tail = tail_.load(std::memory_order_relaxed);
  // seq_cst (so also release, pairing with the worker's acquire of tail_):
  // ordered against the load of waiting_for_space_ below (Dekker with
  // WaitForSpace(): either we see the flag or the worker sees the new tail).
  tail_.store(tail + count, std::memory_order_seq_cst);
  if (waiting_for_space_.load(std::memory_order_seq_cst)) Kick();
}

size_t FtraceCpuReader::ReadyPages() const {
  return static_cast<size_t>(head_.load(std::memory_order_acquire) -
                             tail_.load(std::memory_order_acquire));
}

FtraceCpuReaderStats FtraceCpuReader::stats() const { return stats_.Load(); }

void FtraceCpuReader::WorkerLoop() {
  bool last_read_got_pages = true;
  // Whether the last poll reported trace_pipe_raw readable.
  bool last_poll_trace_readable = false;
  while (!control_.stopping()) {
    uint64_t flush_ticket = 0;
    const bool flushing = control_.PendingFlush(&flush_ticket);
    if (control_.paused()) {
      if (flushing) {
        control_.CompleteFlush(flush_ticket);
        signal_->Notify();
        continue;
      }
      WaitForWake(false);
      continue;
    }
    const uint64_t pages_before = head_.load(std::memory_order_relaxed);
    const ReadResult result = ReadAvailable(flushing);
    last_read_got_pages = head_.load(std::memory_order_relaxed) != pages_before;
    if (last_read_got_pages) {
      wakeups_without_pages_ = 0;
    } else if (wakeups_without_pages_ < kBusyWakeups) {
      wakeups_without_pages_++;
    }
    if (result == ReadResult::kPoolFull) {
      stats_.Add(&FtraceCpuReaderStats::pool_full);
      signal_->Notify();
      waiting_for_space_.store(true, std::memory_order_seq_cst);
      // Re-check after publishing the flag (see Release()).
      const uint64_t head = head_.load(std::memory_order_relaxed);
      if (head - tail_.load(std::memory_order_seq_cst) >= pool_pages_ &&
          !control_.stopping()) {
        WaitForWake(false);
      }
      waiting_for_space_.store(false, std::memory_order_relaxed);
      continue;
    }
    if (flushing && !control_.stopping()) {
      // Everything the kernel had is in the pool (and visible: release).
      control_.CompleteFlush(flush_ticket);
      signal_->Notify();
      continue;
    }
    // Poll the kernel fd unless it cannot tell us anything new: a plain file
    // at EOF is always "readable", and with buffer_percent 0 a partial page
    // makes trace_pipe_raw readable while splice has nothing to give, so
    // after a "readable" poll whose read got nothing we wait for the drain
    // thread's kick once. Waiting for the kick whenever a read came back
    // empty (the reader caught up exactly) left the CPU unread for a whole
    // drain period and overran 1 MiB buffers at ~1 M events/s
    // (docs/PERFORMANCE.md, sluice record vs trace-cmd).
    const bool poll_trace = !saw_eof_ && result != ReadResult::kError &&
                            (last_read_got_pages || !last_poll_trace_readable);
    last_poll_trace_readable = WaitForWake(poll_trace);
  }
}

bool FtraceCpuReader::WaitForWake(bool include_trace_fd) {
  struct pollfd fds[2] = {{control_.wake_fd(), POLLIN, 0}, {trace_fd_, POLLIN, 0}};
  const uint32_t timeout_ms =
      wakeups_without_pages_ < kBusyWakeups ? busy_poll_timeout_ms_ : poll_timeout_ms_;
  int n = poll(fds, include_trace_fd ? 2 : 1, static_cast<int>(timeout_ms));
  if (n > 0 && (fds[0].revents & POLLIN)) control_.DrainWakeups();
  return include_trace_fd && n > 0 && (fds[1].revents & POLLIN);
}

FtraceCpuReader::ReadResult FtraceCpuReader::ReadAvailable(bool include_partial) {
  // A writer that keeps writing refills the partial page as fast as we take
  // it; a flush takes a few and leaves the rest for the next one.
  constexpr int kMaxPartialReads = 4;
  int partial_reads = 0;
  for (;;) {
    if (control_.stopping()) return ReadResult::kDrained;
    const uint64_t head = head_.load(std::memory_order_relaxed);  // Our own.
    // Acquire pairs with Release(): the drain thread is done with those slots.
    const uint64_t tail = tail_.load(std::memory_order_acquire);
    const uint64_t free_slots = pool_pages_ - (head - tail);
    if (free_slots == 0) return ReadResult::kPoolFull;
    const uint64_t contiguous = std::min<uint64_t>(free_slots, pool_pages_ - head % pool_pages_);
    uint8_t* slot = Slot(head);
    uint64_t got_pages = 0;
    bool partial = false;

    if (splice_pages_ > 0) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(contiguous, splice_pages_)) *
                          page_size_;
      ssize_t n = splice(trace_fd_, nullptr, pipe_write_, nullptr, want, SPLICE_F_NONBLOCK);
      if (n > 0) {
        // Move what the kernel spliced from the pipe into the slots.
        size_t done = 0;
        while (done < static_cast<size_t>(n)) {
          ssize_t r = read(pipe_read_, slot + done, static_cast<size_t>(n) - done);
          if (r < 0 && errno == EINTR) continue;
          if (r <= 0) break;
          done += static_cast<size_t>(r);
        }
        if (done != static_cast<size_t>(n)) {
          stats_.Add(&FtraceCpuReaderStats::read_errors);
          return ReadResult::kError;
        }
        // Sub-buffers arrive whole; only a plain file (tests) can end mid-page.
        const size_t tail_bytes = done % page_size_;
        if (tail_bytes != 0) std::memset(slot + done, 0, page_size_ - tail_bytes);
        got_pages = (done + page_size_ - 1) / page_size_;
        stats_.Add(&FtraceCpuReaderStats::bytes, done);
      } else if (n == 0) {
        saw_eof_ = true;  // Plain file.
        if (!include_partial) return ReadResult::kDrained;
      } else if (errno == EINTR) {
        continue;
      } else if (errno == EAGAIN) {
        if (!include_partial) return ReadResult::kDrained;
      } else if (errno == EINVAL || errno == ENOSYS) {
        splice_pages_ = 0;  // No splice for this file: read(2) from now on.
        continue;
      } else {
        stats_.Add(&FtraceCpuReaderStats::read_errors);
        return ReadResult::kError;
      }
      partial = got_pages == 0;
    }

    if (got_pages == 0) {
      if (partial && ++partial_reads > kMaxPartialReads) return ReadResult::kDrained;
      if (!ReadOnePage(slot)) return ReadResult::kDrained;
      got_pages = 1;
      if (partial) stats_.Add(&FtraceCpuReaderStats::partial_pages);
    }
    // Release pairs with NextReady()'s acquire: publishes the page bytes.
    head_.store(head + got_pages, std::memory_order_release);
    stats_.Add(&FtraceCpuReaderStats::pages, got_pages);
    if (head + got_pages - tail >= pool_pages_ / 2) signal_->Notify();
  }
}

bool FtraceCpuReader::ReadOnePage(uint8_t* slot) {
  // One read() per page: the kernel returns the whole reader page (up to
  // commit, zero-filled after) for a page-sized read; a second read() would
  // start the next page, so a short read is padded, never continued.
  ssize_t r;
  do {
    r = read(trace_fd_, slot, page_size_);
  } while (r < 0 && errno == EINTR);
  if (r < 0) {
    if (errno != EAGAIN) stats_.Add(&FtraceCpuReaderStats::read_errors);
    return false;
  }
  if (r == 0) {
    saw_eof_ = true;
    return false;
  }
  if (static_cast<size_t>(r) < page_size_) std::memset(slot + r, 0, page_size_ - static_cast<size_t>(r));
  stats_.Add(&FtraceCpuReaderStats::bytes, static_cast<uint64_t>(r));
  return true;
}

}  // namespace sluice
