// FtraceMappedCpuReader: one CPU's ftrace ring buffer read in place through
// the buffer's memory mapping (Linux 6.10+; the kernel's
// Documentation/trace/ring-buffer-map.rst) and encoded straight into the
// CPU's TraceWriter: no copy out of the kernel, no pipe, no page allocated
// and freed per page as splice(2) does (ftrace_cpu_reader.h, the fallback).
//
//   mmap(per_cpu/cpuN/trace_pipe_raw):
//   ┌───────────┬──────────────┬──────────────┬─────┬────────────────────┐
//   │ meta page │ sub-buffer 0 │ sub-buffer 1 │ ... │ sub-buffer n-1     │
//   └───────────┴──────────────┴──────────────┴─────┴────────────────────┘
//   ioctl(TRACE_MMAP_IOCTL_GET_READER): the kernel swaps the next sub-buffer
//   holding data into the reader's hands; meta->reader.id names it.
//
//   worker (FtraceReaderWorker): GET_READER ─▶ encoder.EncodePage(the
//   sub-buffer, in place) ─▶ ... until nothing is new
//
// The reader page. A sub-buffer handed out by GET_READER is the reader's
// until the next GET_READER, which may give it back to the writer: the
// worker finishes encoding a page before it asks for the next. The writer
// still appends to it when it is also the commit page (the reader caught up
// with the writer); the next GET_READER then returns the same id with more
// data. The worker remembers where it stopped (the end of the commit it
// read) and resumes there (FtracePageEncoder::EncodePage's resume_offset).
// The kernel counts the page as read up to the size it had at the ioctl; the
// worker reads up to the commit it sees, never less, so nothing is read
// twice and nothing is skipped.
//
// Wake-ups, ownership of the encoder and writer (the read mutex), and
// flushes are the worker's (ftrace_reader_worker.h), shared with the splice
// reader.
//
// Loss accounting is the page flags' (RB_MISSED_EVENTS, counted by the
// encoder) plus the meta page's figures (meta()): entries, overrun, read and
// the events lost at the last swap, the numbers per_cpu/cpuN/stats gives.
//
// What the kernel refuses while a buffer is mapped: resizing it
// (buffer_size_kb, buffer_subbuf_size_kb: EBUSY) and snapshots. The data
// source unmaps (destroys its readers) before it restores tracefs.
//
// Hot path (ReadAvailable): allocation-free; one ioctl per sub-buffer.
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_MAPPED_CPU_READER_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_MAPPED_CPU_READER_H_

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

struct FtraceMappedCpuReaderStats {
  uint64_t pages = 0;          // Sub-buffers encoded (a resumed one once).
  uint64_t resumed_reads = 0;  // Reads that continued the same reader page.
  uint64_t bytes = 0;          // Event data bytes encoded.
  uint64_t ioctl_errors = 0;   // GET_READER failures.
  uint64_t bad_reader_ids = 0; // meta->reader.id out of range (a kernel bug).
};

// The meta page's figures (the kernel's per-CPU ring buffer counters).
struct FtraceMappedMeta {
  uint64_t entries = 0;
  uint64_t overrun = 0;
  uint64_t read = 0;
  uint64_t reader_lost_events = 0;  // Lost at the last reader swap.
  uint32_t subbuf_size = 0;
  uint32_t nr_subbufs = 0;
};

class FtraceMappedCpuReader : public FtraceReaderWorker {
 public:
  // Opens and maps `trace_pipe_raw_path`. Fails, with the reason, where the
  // kernel has no mapping (before 6.10: ENODEV/EINVAL from mmap; a boot-
  // mapped buffer: ENODEV), the file is not on tracefs (a test tree of plain
  // files, which must not be mapped: reading past their end is SIGBUS), the
  // buffer cannot be mapped now (EBUSY: a snapshot is allocated) or its
  // meta page is not one this sluice understands. `encoder`, `writer` and
  // `signal` outlive the reader.
  static StatusOr<std::unique_ptr<FtraceMappedCpuReader>> Create(
      uint32_t cpu, const std::string& trace_pipe_raw_path, const FtraceHeaderFormat& header,
      FtracePageEncoder* encoder, TraceWriter* writer, DrainSignal* signal, bool start_paused = false);
  ~FtraceMappedCpuReader() override;  // Stops the worker, unmaps, closes.

  FtraceMappedCpuReaderStats stats() const { return stats_.Load(); }
  FtraceMappedMeta meta() const;

 private:
  FtraceMappedCpuReader(uint32_t cpu, const FtraceHeaderFormat& header, FtracePageEncoder* encoder,
                        TraceWriter* writer, DrainSignal* signal);
  // Swaps in and encodes reader pages until caught up (at most a ring's
  // worth per call: kMore then). The commit of the reader page is read
  // whether or not `flushing`.
  ReadResult ReadAvailable(bool flushing, bool* got_data) override;

  const FtraceHeaderFormat header_;
  ScopedFd trace_fd_;  // Closed after the destructor unmaps.
  const uint8_t* meta_ = nullptr;  // The meta page (kernel-written).
  size_t meta_length_ = 0;
  const uint8_t* data_ = nullptr;  // Sub-buffer 0.
  size_t data_length_ = 0;
  uint32_t subbuf_size_ = 0;
  uint32_t nr_subbufs_ = 0;
  // The reader page last encoded and where its data ended (under the
  // worker's read mutex).
  uint32_t current_id_ = UINT32_MAX;
  size_t current_end_ = 0;

  AtomicStats<FtraceMappedCpuReaderStats> stats_;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_MAPPED_CPU_READER_H_
