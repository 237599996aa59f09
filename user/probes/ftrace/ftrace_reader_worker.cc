#include "user/probes/ftrace/ftrace_reader_worker.h"

#include <poll.h>
#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

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

FtraceReaderWorker::FtraceReaderWorker(uint32_t cpu, FtracePageEncoder* encoder, TraceWriter* writer,
                                       DrainSignal* signal)
    : cpu_(cpu), encoder_(encoder), writer_(writer), signal_(signal) {}

FtraceReaderWorker::~FtraceReaderWorker() { StopThread(); }

void FtraceReaderWorker::StartThread(uint32_t drain_period_ms) {
  if (thread_.joinable()) return;
  // poll()'s timeout: -1 (none) without a period.
  drain_timeout_ms_ = drain_period_ms == 0 ? -1 : static_cast<int>(drain_period_ms);
  thread_ = std::thread([this] { WorkerLoop(); });
}

void FtraceReaderWorker::StopThread() {
  control_.RequestStop();
  if (thread_.joinable()) thread_.join();
}

void FtraceReaderWorker::Flush(FlushRoomWait* room_wait) {
  std::lock_guard<std::mutex> lock(read_mutex_);
  if (!control_.paused()) {
    const uint64_t pages_before = encoder_->stats().pages;
    FlushRoomWait own_wait(flush_room_patience_);
    ReadAllForFlush(room_wait ? room_wait : &own_wait);
    // A catch-up of its own, as a worker's wake-up is: the buffer held
    // this flush's pages at once, not the sum of the flushes since the
    // worker last woke. Summed, a recorder at rest (its workers asleep
    // through several flushes) reported its buffers over full and lowered
    // the watermark, and its readers then woke twice as often.
    catch_up_pages_ += encoder_->stats().pages - pages_before;
    EndCatchUp();
    encoder_->FinishBundle();
    PublishEncoderStats();
  }
  writer_->Flush();
}

void FtraceReaderWorker::ReadAllForFlush(FlushRoomWait* room_wait) {
  bool counted_wait = false;
  int rings = 0;
  for (;;) {
    bool took = false;
    const ReadResult result = ReadAvailable(true, &took);
    if (took) room_wait->NoteProgress();
    if (result == ReadResult::kMore) {
      if (++rings >= kMostRingsPerFlush) break;
    } else if (result != ReadResult::kNoRoom) {
      break;
    } else if (room_wait->KeepWaiting(took)) {
      // A plain sleep, not the worker's eventfd: a kick this thread took
      // would be lost to the worker.
      const auto start = std::chrono::steady_clock::now();
      std::this_thread::sleep_for(std::chrono::milliseconds(kRoomRetryMs));
      CountRoomWait(!std::exchange(counted_wait, true), std::chrono::steady_clock::now() - start);
    } else {
      ignore_room_ = true;
    }
  }
  ignore_room_ = false;
}

void FtraceReaderWorker::WorkerLoop() {
  // Named for top -H, perf and /proc/<pid>/task (at most 15 characters).
  pthread_setname_np(pthread_self(), ("ftrace-read/" + std::to_string(cpu_)).substr(0, 15).c_str());
  // Whether the wait that ended just before this read was the kernel's
  // (trace_pipe_raw readable). Taken at the top of each round, so that any
  // other round in between (a wait for room, a ring's worth) clears it: a
  // flush that coincided with the watermark and read everything left the
  // next read nothing to find, and the worker then stopped watching the
  // watermark for a whole drain period, long enough at the highest rate for
  // the buffer to wrap (one run in four lost ~40 k events, 2026-11-29).
  bool woke_by_kernel = false;
  std::unique_lock<std::mutex> lock(read_mutex_);
  while (!control_.stopping()) {
    const bool read_after_kernel_wake = std::exchange(woke_by_kernel, false);
    if (control_.paused()) {
      WaitForWake(lock, false);
      continue;
    }
    bool got = false;
    const uint64_t pages_before = encoder_->stats().pages;
    const ReadResult result = ReadAvailable(false, &got);
    catch_up_pages_ += encoder_->stats().pages - pages_before;
    encoder_->FinishBundle();
    PublishEncoderStats();
    if (result == ReadResult::kNoRoom) {
      WaitForRoom(lock);
      continue;
    }
    waiting_for_room_ = false;
    if (result == ReadResult::kMore) continue;  // A ring's worth: go on.
    // Caught up: what the kernel holds now is younger than this read, so
    // the drain deadline is a whole period from now.
    const bool poll_trace = result != ReadResult::kError && (got || !read_after_kernel_wake);
    // Deaf (a kernel wake-up whose read found nothing, or an error): without
    // trace_pipe_raw for kDeafMs at most, then listening again. Never until
    // the drain deadline alone: without one (the default) only a flush
    // would have woken the worker, and a ring-buffer session has none until
    // it ends, while the kernel overwrote that CPU's events (CI, 2026-12-03
    // and -04: a 64 KiB buffer written for 60 s, its reader asleep).
    const int timeout_ms = poll_trace ? drain_timeout_ms_
                                      : (drain_timeout_ms_ < 0 ? kDeafMs : std::min(drain_timeout_ms_, kDeafMs));
    woke_by_kernel = WaitForWake(lock, poll_trace, timeout_ms);
  }
  EndCatchUp();
}

bool FtraceReaderWorker::NoRoomFor(uint32_t raw_bytes) {
  if (ignore_room_) return false;
  if (room_credit_ < raw_bytes) {
    room_credit_ = writer_->RoomBytes(kRoomCreditBytes) / kEncodedBytesPerRawByte;
    constexpr uint64_t kPage = 4096;
    if (room_credit_ < std::min<uint64_t>(raw_bytes, kPage)) {
      room_credit_ = 0;
      return true;
    }
  }
  room_credit_ -= std::min<uint64_t>(room_credit_, raw_bytes);
  return false;
}

void FtraceReaderWorker::EndCatchUp() {
  if (catch_up_pages_ > wake_stats_.Get(&FtraceReaderWakeStats::most_pages_per_wake))
    wake_stats_.Set(&FtraceReaderWakeStats::most_pages_per_wake, catch_up_pages_);
  if (near_miss_pages_ != 0 && catch_up_pages_ >= near_miss_pages_) {
    near_miss_pages_ = 0;
    // After the maximum is published: Notify()'s mutex orders that store
    // before the drain thread's look at wake_stats() once it wakes.
    signal_->Notify();
  }
  catch_up_pages_ = 0;
}

void FtraceReaderWorker::WaitForRoom(std::unique_lock<std::mutex>& lock) {
  EndCatchUp();
  const auto start = std::chrono::steady_clock::now();
  // Not on trace_pipe_raw: it stays readable while we leave its data there.
  WaitForWake(lock, false, kRoomRetryMs);
  CountRoomWait(!std::exchange(waiting_for_room_, true), std::chrono::steady_clock::now() - start);
}

void FtraceReaderWorker::CountRoomWait(bool first, std::chrono::steady_clock::duration waited) {
  if (first) wake_stats_.Add(&FtraceReaderWakeStats::smb_full_waits);
  wake_stats_.Add(&FtraceReaderWakeStats::smb_full_wait_us,
                  static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(waited).count()));
}

bool FtraceReaderWorker::WaitForWake(std::unique_lock<std::mutex>& lock, bool include_trace_fd, int timeout_ms) {
  EndCatchUp();
  struct pollfd fds[2] = {{control_.wake_fd(), POLLIN, 0}, {trace_fd_, POLLIN, 0}};
  const bool poll_trace = include_trace_fd && trace_fd_ >= 0;
  // A flush may read this CPU meanwhile.
  lock.unlock();
  const int n = poll(fds, poll_trace ? 2 : 1, timeout_ms);
  lock.lock();
  if (n > 0 && (fds[0].revents & POLLIN)) control_.DrainWakeups();
  const bool by_kernel = poll_trace && n > 0 && (fds[1].revents & POLLIN);
  wake_stats_.Add(&FtraceReaderWakeStats::wakeups);
  if (by_kernel) wake_stats_.Add(&FtraceReaderWakeStats::watermark_wakeups);
  return by_kernel;
}

}  // namespace sluice
