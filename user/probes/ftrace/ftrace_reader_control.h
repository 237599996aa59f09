// FtraceReaderControl: what a per-CPU ftrace reader's worker thread shares
// with the threads that drive it (the drain thread, Start/Stop): an eventfd
// that wakes the worker out of poll(), and the pause and stop flags. The
// splice reader (ftrace_cpu_reader.h) and the mapped reader
// (ftrace_mapped_cpu_reader.h) both use it through FtraceReaderWorker. (A
// flush needs nothing here: it reads on the asking thread, under the
// worker's read mutex: ftrace_reader_worker.h.)
//
// Pause and stop: release stores by the driver (then a kick), acquire loads
// by the worker; they carry no data.
//
// Thread-safety: the driver side from any thread; DrainWakeups from the
// worker only.
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_READER_CONTROL_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_READER_CONTROL_H_

#include <atomic>

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
  void SetPaused(bool paused);
  void RequestStop();

  // --- Worker side. ---
  bool paused() const { return paused_.load(std::memory_order_acquire); }
  bool stopping() const { return stop_.load(std::memory_order_acquire); }
  // Clears the eventfd after poll() said it was readable.
  void DrainWakeups();

 private:
  ScopedFd wake_fd_;
  std::atomic<bool> paused_{false};
  std::atomic<bool> stop_{false};
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_READER_CONTROL_H_
