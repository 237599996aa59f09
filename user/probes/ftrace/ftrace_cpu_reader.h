// FtraceCpuReader: one CPU's ftrace ring buffer read with splice(2) from
// per_cpu/cpuN/trace_pipe_raw and encoded straight into the CPU's
// TraceWriter, on the CPU's worker thread (FtraceReaderWorker; a flush reads
// on its own thread, taking turns with the worker). The path for
// kernels without the ring buffer mapping (before 6.10) and for
// `--ftrace-read=splice`; FtraceMappedCpuReader reads in place where it can.
//
//   trace_pipe_raw ──splice(2)──▶ pipe ──read(2)──▶ batch ──▶ FtracePageEncoder ─▶ writer
//                  (page refs,                     (splice_pages
//                   no copy)                        pages, reused)
//
// Why splice. splice() hands the kernel's sub-buffers to the pipe by
// reference; the one copy is pipe -> batch. It returns only *full* pages
// (the kernel passes full=1 to ring_buffer_read_page()), so the page the
// kernel is still writing stays in the kernel until it is full. For the
// partial page at the end (a flush, a stop), the reader falls back to
// read(2), which copies out whatever the reader page holds (a page whose
// commit field says how much) and consumes it; events written afterwards
// start the next page. Where the pipe cannot hold one sub-buffer, read(2) is
// used throughout.
//
// trace_pipe_raw is opened O_NONBLOCK and splice gets SPLICE_F_NONBLOCK, so
// a read never blocks in the kernel: the worker sleeps in poll()
// (ftrace_reader_worker.h), and stopping never waits on the kernel.
//
// Nothing is dropped in user space: the batch is encoded before the next
// splice. While the worker is behind, the backlog stays in the kernel
// buffer, and if that overflows the kernel counts it (per_cpu/cpuN/stats
// overrun) and flags the next page it hands out (RB_MISSED_EVENTS), which
// the encoder turns into lost_events.
//
// Hot path (ReadAvailable): allocation-free; the batch is allocated once.
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_CPU_READER_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_CPU_READER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "shm/base/atomic_stats.h"
#include "shm/base/scoped_fd.h"
#include "shm/base/status.h"
#include "shm/trace_writer.h"
#include "user/probes/ftrace/ftrace_page_encoder.h"
#include "user/probes/ftrace/ftrace_reader_worker.h"

namespace sluice {

struct FtraceCpuReaderOptions {
  uint32_t page_size = 4096;  // Sub-buffer size (header_page data offset + size).
  uint32_t splice_pages = 16;  // Pages per splice() call at most (the batch); 0: read(2) only.
  // Pages one ReadAvailable() reads before it returns kMore: the kernel
  // buffer's size, so a flush ends even if the writer keeps up.
  uint32_t max_pages_per_read = 256;
  bool start_paused = false;  // Tests: start without reading.
};

struct FtraceCpuReaderStats {
  uint64_t pages = 0;          // Pages read and encoded.
  uint64_t partial_pages = 0;  // Of those, read with read(2) (not full).
  uint64_t bytes = 0;          // Bytes read from the kernel.
  uint64_t read_errors = 0;    // splice/read errors other than "no data".
};

class FtraceCpuReader : public FtraceReaderWorker {
 public:
  // Opens `trace_pipe_raw_path` and the pipe, allocates the batch.
  // `encoder`, `writer` and `signal` outlive the reader.
  static StatusOr<std::unique_ptr<FtraceCpuReader>> Create(uint32_t cpu,
                                                           const std::string& trace_pipe_raw_path,
                                                           const FtraceCpuReaderOptions& options,
                                                           FtracePageEncoder* encoder, TraceWriter* writer,
                                                           DrainSignal* signal);
  ~FtraceCpuReader() override;  // Stops the worker, closes the fds.

  uint32_t page_size() const { return page_size_; }
  FtraceCpuReaderStats stats() const { return stats_.Load(); }

 private:
  FtraceCpuReader(uint32_t cpu, const FtraceCpuReaderOptions& options, FtracePageEncoder* encoder,
                  TraceWriter* writer, DrainSignal* signal);
  ReadResult ReadAvailable(bool flushing, bool* got_data) override;
  // Splices up to a batch of full pages into batch_; returns the pages, 0 if
  // the kernel has no full page (*failed on an error).
  uint32_t SpliceBatch(bool* failed);
  // Reads one page (partial or not) with read(2) into batch_; false if none
  // (*failed on an error).
  bool ReadOnePage(bool* failed);

  const uint32_t page_size_;
  uint32_t splice_pages_;  // 0: read(2) only.
  const uint32_t max_pages_per_read_;
  std::unique_ptr<uint8_t[]> batch_;  // max(splice_pages_, 1) pages.

  ScopedFd trace_fd_;
  ScopedFd pipe_read_;
  ScopedFd pipe_write_;

  AtomicStats<FtraceCpuReaderStats> stats_;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_CPU_READER_H_
