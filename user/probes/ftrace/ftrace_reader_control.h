// FtraceReaderControl: what a per-CPU ftrace reader's worker thread shares
// with the threads that drive it (the drain thread, Start/Stop): an eventfd
// that wakes the worker out of poll(), the flush handshake, and the pause and
// stop flags. The splice reader (ftrace_cpu_reader.h) and the mapped reader
// (ftrace_mapped_cpu_reader.h) both use it, so the handshake is written, and
// its memory orders argued, once.
//
// Flush handshake:
//   driver: ticket = RequestFlush()  flush_requested_ += 1 (acq_rel), Kick()
//   worker: PendingFlush(&ticket)    acquire load of flush_requested_
//           ... reads everything the kernel holds, publishes it ...
//           CompleteFlush(ticket)    release store of flush_done_
//   driver: FlushDone(ticket)        acquire load of flush_done_: everything
//                                    the worker published before the
//                                    release store is visible.
// Pause and stop: release stores by the driver (then a kick), acquire loads
// by the worker; they carry no data.
//
// Thread-safety: the driver side from any thread; PendingFlush,
// CompleteFlush and DrainWakeups from the worker only.
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_READER_CONTROL_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_READER_CONTROL_H_

#include <atomic>
#include <cstdint>

#include "shm/base/scoped_fd.h"
#include "shm/base/status.h"

namespace sluice {

class FtraceReaderControl {
 public:
  FtraceReaderControl() = default;
  FtraceReaderControl(const FtraceReaderControl&) = delete;
  FtraceReaderControl& operator=(const FtraceReaderControl&) = delete;

  // Creates the eventfd.
  Status Open();
  int wake_fd() const { return wake_fd_.get(); }

  // --- Driver side (any thread). ---
  // Wakes the worker (a no-op before Open()).
  void Kick();
  uint64_t RequestFlush();
  bool FlushDone(uint64_t ticket) const { return flush_done_.load(std::memory_order_acquire) >= ticket; }
  void SetPaused(bool paused);
  void RequestStop();

  // --- Worker side. ---
  // True if a flush is asked for and not done yet; *ticket says which.
  bool PendingFlush(uint64_t* ticket) const {
    *ticket = flush_requested_.load(std::memory_order_acquire);
    return *ticket != flush_done_.load(std::memory_order_relaxed);  // Only the worker stores it.
  }
  void CompleteFlush(uint64_t ticket) { flush_done_.store(ticket, std::memory_order_release); }
  bool paused() const { return paused_.load(std::memory_order_acquire); }
  bool stopping() const { return stop_.load(std::memory_order_acquire); }
  // Clears the eventfd after poll() said it was readable.
  void DrainWakeups();

 private:
  ScopedFd wake_fd_;
  std::atomic<uint64_t> flush_requested_{0};
  std::atomic<uint64_t> flush_done_{0};
  std::atomic<bool> paused_{false};
  std::atomic<bool> stop_{false};
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_READER_CONTROL_H_
