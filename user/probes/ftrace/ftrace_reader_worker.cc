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

void DrainSignal::ExpectFlushes(uint32_t n) { flushes_left_.store(n, std::memory_order_relaxed); }

void DrainSignal::FlushDone() {
  uint32_t left = flushes_left_.load(std::memory_order_relaxed);
  while (left != 0 && !flushes_left_.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) {
  }
  if (left <= 1) Notify();
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

void FtraceReaderWorker::ReadRemaining() {
  // The worker is gone: this thread owns the encoder and the writer. The
  // last read: it does not wait for room (the final flush did).
  ignore_room_ = true;
  bool got = false;
  for (int rings = 1; ReadAvailable(true, &got) == ReadResult::kMore && rings < kMostRingsPerFlush; rings++) {
  }
  ignore_room_ = false;
  encoder_->FinishBundle();
  PublishEncoderStats();
}

void FtraceReaderWorker::WorkerLoop() {
  // Named for top -H, perf and /proc/<pid>/task (at most 15 characters).
  pthread_setname_np(pthread_self(), ("ftrace-read/" + std::to_string(cpu_)).substr(0, 15).c_str());
  // Whether the wait that ended just before this read was the kernel's
  // (trace_pipe_raw readable). Taken at the top of each round, so that any
  // other round in between (a flush, a wait for room, a ring's worth) clears
  // it: a flush that coincided with the watermark and read everything left
  // the next read nothing to find, and the worker then stopped watching the
  // watermark for a whole drain period, long enough at the highest rate for
  // the buffer to wrap (one run in four lost ~40 k events, 2026-11-29).
  bool woke_by_kernel = false;
  while (!control_.stopping()) {
    const bool read_after_kernel_wake = std::exchange(woke_by_kernel, false);
    uint64_t ticket = 0;
    const bool flushing = control_.PendingFlush(&ticket);
    if (control_.paused()) {
      if (flushing) {
        writer_->Flush();  // What it encoded before the pause.
        control_.CompleteFlush(ticket);
        signal_->FlushDone();
        continue;
      }
      WaitForWake(false);
      continue;
    }
    bool got = false;
    const uint64_t pages_before = encoder_->stats().pages;
    ReadResult result = ReadAvailable(flushing, &got);
    if (flushing) result = ReadRestOfFlush(result, got);
    catch_up_pages_ += encoder_->stats().pages - pages_before;
    encoder_->FinishBundle();
    PublishEncoderStats();
    if (flushing && !control_.stopping()) {
      writer_->Flush();
      control_.CompleteFlush(ticket);
      signal_->FlushDone();
      continue;
    }
    if (result == ReadResult::kNoRoom) {
      WaitForRoom();
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
    woke_by_kernel = WaitForWake(poll_trace, timeout_ms);
  }
  EndCatchUp();
}

FtraceReaderWorker::ReadResult FtraceReaderWorker::ReadRestOfFlush(ReadResult result, bool took) {
  FlushRoomWait room_wait(flush_room_patience_);
  int rings = result == ReadResult::kMore ? 1 : 0;
  while (!control_.stopping() && rings < kMostRingsPerFlush) {
    if (result == ReadResult::kNoRoom) {
      if (room_wait.KeepWaiting(took)) {
        WaitForRoom();
      } else {
        ignore_room_ = true;
      }
    } else if (result != ReadResult::kMore) {
      break;
    }
    took = false;
    result = ReadAvailable(true, &took);
    if (result == ReadResult::kMore) rings++;
  }
  ignore_room_ = false;
  waiting_for_room_ = false;
  return result;
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

void FtraceReaderWorker::WaitForRoom() {
  EndCatchUp();
  // Not on trace_pipe_raw: it stays readable while we leave its data there.
  if (!waiting_for_room_) wake_stats_.Add(&FtraceReaderWakeStats::smb_full_waits);
  waiting_for_room_ = true;
  const auto start = std::chrono::steady_clock::now();
  WaitForWake(false, kRoomRetryMs);
  const auto waited = std::chrono::steady_clock::now() - start;
  wake_stats_.Add(&FtraceReaderWakeStats::smb_full_wait_us,
                  static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(waited).count()));
}

bool FtraceReaderWorker::WaitForWake(bool include_trace_fd, int timeout_ms) {
  EndCatchUp();
  struct pollfd fds[2] = {{control_.wake_fd(), POLLIN, 0}, {trace_fd_, POLLIN, 0}};
  const bool poll_trace = include_trace_fd && trace_fd_ >= 0;
  const int n = poll(fds, poll_trace ? 2 : 1, timeout_ms);
  if (n > 0 && (fds[0].revents & POLLIN)) control_.DrainWakeups();
  const bool by_kernel = poll_trace && n > 0 && (fds[1].revents & POLLIN);
  wake_stats_.Add(&FtraceReaderWakeStats::wakeups);
  if (by_kernel) wake_stats_.Add(&FtraceReaderWakeStats::watermark_wakeups);
  return by_kernel;
}

}  // namespace sluice
