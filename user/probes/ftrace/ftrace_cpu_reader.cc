#include "user/probes/ftrace/ftrace_cpu_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "shm/base/errno_message.h"

namespace sluice {

FtraceCpuReader::FtraceCpuReader(uint32_t cpu, const FtraceCpuReaderOptions& options,
                                 FtracePageEncoder* encoder, TraceWriter* writer, DrainSignal* signal)
    : FtraceReaderWorker(cpu, encoder, writer, signal),
      page_size_(options.page_size),
      splice_pages_(options.splice_pages),
      max_pages_per_read_(std::max<uint32_t>(options.max_pages_per_read, 1)),
      batch_(new uint8_t[static_cast<size_t>(std::max<uint32_t>(splice_pages_, 1)) * page_size_]) {
  if (options.start_paused) SetPaused(true);
}

StatusOr<std::unique_ptr<FtraceCpuReader>> FtraceCpuReader::Create(
    uint32_t cpu, const std::string& trace_pipe_raw_path, const FtraceCpuReaderOptions& options,
    FtracePageEncoder* encoder, TraceWriter* writer, DrainSignal* signal) {
  if (options.page_size < 64 || options.page_size > (64u << 20)) {
    return Status::Error("implausible ftrace page size " + std::to_string(options.page_size));
  }
  std::unique_ptr<FtraceCpuReader> r(new FtraceCpuReader(cpu, options, encoder, writer, signal));
  r->trace_fd_.reset(open(trace_pipe_raw_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!r->trace_fd_.valid()) {
    return Status::Error("cannot open " + trace_pipe_raw_path + " (" + ErrnoMessage(errno) +
                         "): run sluice as root");
  }
  r->set_trace_fd(r->trace_fd_.get());
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Error("cannot create a pipe (" + ErrnoMessage(errno) +
                         "): raise the open-files limit (ulimit -n)");
  }
  r->pipe_read_.reset(fds[0]);
  r->pipe_write_.reset(fds[1]);
  // The pipe must hold one splice() worth of sub-buffers. If it cannot hold
  // even one (pipe-max-size below the sub-buffer size), use read(2) only.
  const long want = static_cast<long>(r->splice_pages_) * r->page_size_;
  if (want > 0 && fcntl(r->pipe_write_.get(), F_SETPIPE_SZ, want) < 0) {
    const long have = fcntl(r->pipe_write_.get(), F_GETPIPE_SZ);
    r->splice_pages_ = have > 0 ? std::min(r->splice_pages_, static_cast<uint32_t>(have / r->page_size_)) : 0;
  }
  SLUICE_RETURN_IF_ERROR(r->OpenControl());
  return r;
}

FtraceCpuReader::~FtraceCpuReader() {
  StopThread();  // Before the fds close (the members, after this): the worker reads them.
}

FtraceCpuReader::ReadResult FtraceCpuReader::ReadAvailable(bool flushing, bool* got_data) {
  // A writer that keeps writing refills the partial page as fast as we take
  // it; a flush takes a few and leaves the rest for the next one.
  constexpr int kMaxPartialReads = 4;
  int partial_reads = 0;
  uint32_t pages_read = 0;
  while (pages_read < max_pages_per_read_) {
    if (NoRoomFor(std::max<uint32_t>(splice_pages_, 1) * page_size_)) return ReadResult::kNoRoom;
    bool failed = false;
    uint32_t got = splice_pages_ > 0 ? SpliceBatch(&failed) : 0;
    if (failed) return ReadResult::kError;
    bool partial = false;
    if (got == 0) {
      // No full page. The reader page, partial, only when flushing (splice
      // could have given it if it were full); read(2)-only readers take
      // pages as they come.
      if (splice_pages_ > 0) {
        if (!flushing || ++partial_reads > kMaxPartialReads) return ReadResult::kCaughtUp;
        partial = true;
      }
      if (!ReadOnePage(&failed)) return failed ? ReadResult::kError : ReadResult::kCaughtUp;
      got = 1;
      if (partial) stats_.Add(&FtraceCpuReaderStats::partial_pages);
    }
    for (uint32_t i = 0; i < got; i++)
      encoder()->EncodePage(batch_.get() + static_cast<size_t>(i) * page_size_, page_size_, 0, writer());
    *got_data = true;
    stats_.Add(&FtraceCpuReaderStats::pages, got);
    pages_read += got;
  }
  return ReadResult::kMore;
}

uint32_t FtraceCpuReader::SpliceBatch(bool* failed) {
  const size_t want = static_cast<size_t>(splice_pages_) * page_size_;
  ssize_t n;
  do {
    n = splice(trace_fd_.get(), nullptr, pipe_write_.get(), nullptr, want, SPLICE_F_NONBLOCK);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EINVAL || errno == ENOSYS) {
      splice_pages_ = 0;  // No splice for this file: read(2) from now on.
    } else if (errno != EAGAIN) {
      stats_.Add(&FtraceCpuReaderStats::read_errors);
      *failed = true;
    }
    return 0;
  }
  if (n == 0) return 0;  // A plain file at its end.
  // Move what the kernel spliced from the pipe into the batch.
  size_t done = 0;
  while (done < static_cast<size_t>(n)) {
    const ssize_t r = read(pipe_read_.get(), batch_.get() + done, static_cast<size_t>(n) - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    done += static_cast<size_t>(r);
  }
  if (done != static_cast<size_t>(n)) {
    stats_.Add(&FtraceCpuReaderStats::read_errors);
    *failed = true;
    return 0;
  }
  stats_.Add(&FtraceCpuReaderStats::bytes, done);
  // Sub-buffers arrive whole; only a plain file (tests) can end mid-page.
  const size_t tail_bytes = done % page_size_;
  if (tail_bytes != 0) std::memset(batch_.get() + done, 0, page_size_ - tail_bytes);
  return static_cast<uint32_t>((done + page_size_ - 1) / page_size_);
}

bool FtraceCpuReader::ReadOnePage(bool* failed) {
  // One read() per page: the kernel returns the whole reader page (up to
  // commit, zero-filled after) for a page-sized read; a second read() would
  // start the next page, so a short read is padded, never continued.
  ssize_t r;
  do {
    r = read(trace_fd_.get(), batch_.get(), page_size_);
  } while (r < 0 && errno == EINTR);
  if (r < 0) {
    if (errno != EAGAIN) {
      stats_.Add(&FtraceCpuReaderStats::read_errors);
      *failed = true;
    }
    return false;
  }
  if (r == 0) return false;  // A plain file at its end.
  if (static_cast<size_t>(r) < page_size_) std::memset(batch_.get() + r, 0, page_size_ - static_cast<size_t>(r));
  stats_.Add(&FtraceCpuReaderStats::bytes, static_cast<uint64_t>(r));
  return true;
}

}  // namespace sluice
