// FtraceCpuReader: one worker thread per CPU that moves whole ring-buffer
// pages from per_cpu/cpuN/trace_pipe_raw into a fixed pool, for the drain
// thread to parse.
//
//   kernel ring buffer (cpu N)        worker thread                 drain thread
//   ──────────────────────────        ─────────────────────         ─────────────────────────
//   trace_pipe_raw ──splice(2)──▶ pipe ──read(2)──▶ page pool ──▶ FtracePageEncoder ─▶ writer
//                  (page refs,                     (ring of          (NextReady/Release)
//                   no copy)                        pool_pages)
//
// Why splice. splice() hands the kernel's sub-buffers to the pipe by
// reference; the one copy is pipe -> pool. It returns only *full* pages
// (the kernel passes full=1 to ring_buffer_read_page()), so the page the
// kernel is still writing stays in the kernel until it is full. For the
// partial page at the end (Flush(), Stop()), the worker falls back to read(2),
// which copies out whatever the reader page holds (a page whose commit field
// says how much) and consumes it; events written afterwards start the next
// page. Where the pipe cannot hold one sub-buffer, read(2) is used throughout.
//
// Non-blocking, and how the worker sleeps. trace_pipe_raw is opened
// O_NONBLOCK and splice gets SPLICE_F_NONBLOCK, so a read never blocks in the
// kernel. When there is nothing to read, the worker poll()s on trace_pipe_raw
// (readable once the buffer is `buffer_percent` full; 50% by default) and on
// its eventfd, which the drain thread writes to: every drain period (a
// "kick", so that a slowly filling buffer is read each period), when a flush
// is requested, when pool space is freed while the worker waits for it, and
// at stop. So stopping never waits on the kernel. While its CPU produces
// (pages read within the last kBusyWakeups wakeups) the poll also times out
// after busy_poll_timeout_ms, so a buffer is never left alone for a whole
// drain period at high rates; an idle CPU's worker sleeps the drain period.
// (Taken out once, on one day's zero-loss runs; on a slower day the watermark
// alone lost events at the highest rate in 9 of 14 runs, because this worker
// and the drain thread are two stages that each wait for a CPU the workload
// saturates: docs/PERFORMANCE.md. The mapped reader, one stage, holds without.)
//
// The pool is a single-producer/single-consumer ring of `pool_pages` slots of
// `page_size` bytes, allocated once: the steady state does not allocate.
//
//   head_ (written by the worker, release)   tail_ (written by the drain thread, release)
//   slots [tail_, head_) are ready; [head_, tail_ + pool_pages) are free.
//   Both only grow; slot index = position % pool_pages.
//
// When the pool is full the worker stops reading (it never drops a page):
// the kernel buffer absorbs the backlog, and if that overflows the kernel
// counts it (per_cpu/cpuN/stats overrun) and flags the next page it hands out
// (RB_MISSED_EVENTS), which the encoder turns into lost_events. The worker
// tells the drain thread early when the backlog reaches half the pool.
//
// Flush handshake (drain thread ↔ worker, FtraceReaderControl): the worker
// reads until the kernel has nothing left, partial page included, then
// completes the flush (release; every page it read is then visible through
// head_ too) and notifies the DrainSignal. The drain thread keeps draining
// meanwhile, so a full pool cannot deadlock.
//
// Thread-safety: the worker thread owns the fds and head_; exactly one drain
// thread calls NextReady()/Release(); the rest is callable from any thread.
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_CPU_READER_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_CPU_READER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "shm/base/status.h"
#include "shm/base/atomic_stats.h"
#include "user/probes/ftrace/ftrace_reader_control.h"

namespace sluice {

// Wakes the drain thread early (backlog, flush done). Notify() takes a mutex,
// so workers call it at most once per batch of pages, never per event.
class DrainSignal {
 public:
  void Notify();
  // Waits until Notify() or `timeout_ms`; returns true if notified. Clears
  // the notification.
  bool WaitFor(uint32_t timeout_ms);

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool pending_ = false;
};

struct FtraceCpuReaderOptions {
  uint32_t page_size = 4096;    // Sub-buffer size (header_page data offset + size).
  uint32_t pool_pages = 256;    // Pool slots; 1 MiB with 4 KiB pages.
  uint32_t splice_pages = 16;   // Pages per splice() call at most.
  uint32_t poll_timeout_ms = 100;  // Worker's fallback wakeup when idle.
  // Fallback wakeup while its CPU is producing: the worker got pages within
  // the last kBusyWakeups wakeups. Why the buffer_percent wake-up alone is
  // not enough on this path: the comment at the top. At ~1 M events/s a
  // 1 MiB buffer fills in 10-25 ms; trace-cmd reads every 1 ms; a few ms
  // costs ~200 wakeups/s per busy CPU.
  uint32_t busy_poll_timeout_ms = 4;
  bool start_paused = false;    // Tests: start without reading.
};

struct FtraceCpuReaderStats {
  uint64_t pages = 0;          // Pages put into the pool.
  uint64_t partial_pages = 0;  // Of those, read with read(2) (not full).
  uint64_t bytes = 0;          // Bytes read from the kernel.
  uint64_t read_errors = 0;    // splice/read errors other than "no data".
  uint64_t pool_full = 0;      // Times the worker found the pool full and waited.
};

class FtraceCpuReader {
 public:
  // Opens `trace_pipe_raw_path` and the pipe, allocates the pool.
  static StatusOr<std::unique_ptr<FtraceCpuReader>> Create(uint32_t cpu,
                                                           const std::string& trace_pipe_raw_path,
                                                           const FtraceCpuReaderOptions& options,
                                                           DrainSignal* signal);
  ~FtraceCpuReader();  // Stops the thread, closes the fds.
  FtraceCpuReader(const FtraceCpuReader&) = delete;
  FtraceCpuReader& operator=(const FtraceCpuReader&) = delete;

  void StartThread();
  void StopThread();  // Wakes and joins the worker. Idempotent.

  uint32_t cpu() const { return cpu_; }
  uint32_t page_size() const { return page_size_; }
  uint32_t pool_pages() const { return pool_pages_; }

  // --- Drain side (one thread). Allocation-free. ---
  struct Run {
    const uint8_t* pages = nullptr;
    size_t count = 0;
  };
  // The oldest contiguous run of ready pages (empty if none). A wrapped ring
  // gives two runs: call again after Release().
  Run NextReady() const;
  // Frees the first `count` ready pages for the worker.
  void Release(size_t count);
  size_t ReadyPages() const;

  // --- Control (any thread). ---
  // Wakes the worker to read what the kernel has (full pages).
  void Kick() { control_.Kick(); }
  // Asks the worker to read everything, partial page included; returns the
  // ticket to pass to FlushDone().
  uint64_t RequestFlush() { return control_.RequestFlush(); }
  bool FlushDone(uint64_t ticket) const { return control_.FlushDone(ticket); }
  // Tests: while paused, the worker reads nothing (flushes are acknowledged
  // without reading).
  void SetPaused(bool paused) { control_.SetPaused(paused); }

  FtraceCpuReaderStats stats() const;

 private:
  enum class ReadResult { kDrained, kPoolFull, kError };

  FtraceCpuReader(uint32_t cpu, const FtraceCpuReaderOptions& options, DrainSignal* signal);
  void WorkerLoop();
  // Reads until the kernel has no (full, or with include_partial also
  // partial) page left, or the pool is full.
  ReadResult ReadAvailable(bool include_partial);
  // Reads one page with read(2) into the slot at head_; false if none.
  bool ReadOnePage(uint8_t* slot);
  // True if trace_pipe_raw was polled and reported readable.
  bool WaitForWake(bool include_trace_fd);
  uint8_t* Slot(uint64_t position) const {
    return pool_.get() + (position % pool_pages_) * static_cast<size_t>(page_size_);
  }

  const uint32_t cpu_;
  const uint32_t page_size_;
  const uint32_t pool_pages_;
  uint32_t splice_pages_;
  const uint32_t poll_timeout_ms_;
  const uint32_t busy_poll_timeout_ms_;
  // Wakeups since the last one that got pages (worker thread only).
  static constexpr uint32_t kBusyWakeups = 25;
  uint32_t wakeups_without_pages_ = kBusyWakeups;
  DrainSignal* const signal_;
  std::unique_ptr<uint8_t[]> pool_;

  int trace_fd_ = -1;
  int pipe_read_ = -1;
  int pipe_write_ = -1;
  FtraceReaderControl control_;
  std::thread thread_;
  bool saw_eof_ = false;  // A plain file (fake tree) ended: do not poll it.

  // Written by the worker with release; read by the drain thread with acquire.
  std::atomic<uint64_t> head_{0};
  // Written by the drain thread with release; read by the worker with acquire.
  std::atomic<uint64_t> tail_{0};
  // Set by the worker before it sleeps on a full pool, re-checked after
  // (seq_cst both sides, so either Release() sees it or the worker sees the
  // new tail_).
  std::atomic<bool> waiting_for_space_{false};

  // Counted by the worker, read anywhere (relaxed; for display).
  AtomicStats<FtraceCpuReaderStats> stats_;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_CPU_READER_H_
