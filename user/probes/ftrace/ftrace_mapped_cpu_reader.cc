#include "user/probes/ftrace/ftrace_mapped_cpu_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

#include "shm/base/errno_message.h"

namespace sluice {
namespace {

// The kernel's struct trace_buffer_meta (include/uapi/linux/trace_mmap.h,
// 6.10+), declared here: Debian 12's linux-libc-dev predates it. The kernel
// writes it; the fields are read with atomic loads (it may update them at
// any GET_READER or page swap).
struct TraceBufferMeta {
  uint32_t meta_page_size;
  uint32_t meta_struct_len;
  uint32_t subbuf_size;
  uint32_t nr_subbufs;
  uint64_t reader_lost_events;
  uint32_t reader_id;
  uint32_t reader_read;
  uint64_t flags;
  uint64_t entries;
  uint64_t overrun;
  uint64_t read;
  uint64_t reserved1;
  uint64_t reserved2;
};
static_assert(offsetof(TraceBufferMeta, reader_lost_events) == 16);
static_assert(offsetof(TraceBufferMeta, reader_id) == 24);
static_assert(offsetof(TraceBufferMeta, entries) == 40);
static_assert(sizeof(TraceBufferMeta) == 80);

// _IO('R', 0x20).
constexpr unsigned long kTraceMmapIoctlGetReader = _IO('R', 0x20);

// include/uapi/linux/magic.h. /sys/kernel/debug/tracing is tracefs too
// (automounted) since 4.1; a kernel with the mapping always has it.
constexpr long kTracefsMagic = 0x74726163;

// mmap's answers of a kernel (or a file) without the ring buffer mapping:
// no mmap file operation (ENODEV), or one that refuses this file (EINVAL,
// EOPNOTSUPP).
bool IsNoMappingErrno(int err) { return err == ENODEV || err == EINVAL || err == ENOTSUP || err == EOPNOTSUPP; }

template <typename T>
T LoadShared(const T* p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

}  // namespace

FtraceMappedCpuReader::FtraceMappedCpuReader(uint32_t cpu, const FtraceHeaderFormat& header,
                                             FtracePageEncoder* encoder, TraceWriter* writer,
                                             DrainSignal* signal)
    : FtraceReaderWorker(cpu, encoder, writer, signal), header_(header) {}

StatusOr<std::unique_ptr<FtraceMappedCpuReader>> FtraceMappedCpuReader::Create(
    uint32_t cpu, const std::string& trace_pipe_raw_path, const FtraceHeaderFormat& header,
    FtracePageEncoder* encoder, TraceWriter* writer, DrainSignal* signal, bool start_paused) {
  std::unique_ptr<FtraceMappedCpuReader> r(new FtraceMappedCpuReader(cpu, header, encoder, writer, signal));
  if (start_paused) r->SetPaused(true);
  r->trace_fd_.reset(open(trace_pipe_raw_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!r->trace_fd_.valid())
    return Status::Error("cannot open " + trace_pipe_raw_path + " (" + ErrnoMessage(errno) + "): run sluice as root");
  struct statfs fs;
  if (fstatfs(r->trace_fd_.get(), &fs) != 0 || fs.f_type != kTracefsMagic)
    return Status::Error("cannot map " + trace_pipe_raw_path + ": not a tracefs file, so there is no ring buffer mapping");
  const long system_page = sysconf(_SC_PAGESIZE);
  void* meta = mmap(nullptr, static_cast<size_t>(system_page), PROT_READ, MAP_SHARED, r->trace_fd_.get(), 0);
  if (meta == MAP_FAILED) {
    const int err = errno;
    if (IsNoMappingErrno(err))
      return Status::Error("cannot map " + trace_pipe_raw_path + " (" + ErrnoMessage(err) +
                           "): the kernel has no ring buffer mapping (Linux 6.10+)");
    return Status::Error("cannot map " + trace_pipe_raw_path + " (" + ErrnoMessage(err) + ")" +
                         (err == EBUSY ? ": the kernel maps no buffer of an instance with a snapshot allocated"
                                       : ""));
  }
  r->meta_ = static_cast<const uint8_t*>(meta);
  r->meta_length_ = static_cast<size_t>(system_page);
  const auto* m = reinterpret_cast<const TraceBufferMeta*>(r->meta_);
  const uint32_t meta_page_size = LoadShared(&m->meta_page_size);
  r->subbuf_size_ = LoadShared(&m->subbuf_size);
  r->nr_subbufs_ = LoadShared(&m->nr_subbufs);
  if (LoadShared(&m->meta_struct_len) < sizeof(TraceBufferMeta) || meta_page_size == 0 ||
      r->nr_subbufs_ < 2 || r->subbuf_size_ < header.data_offset + 8)
    return Status::Error("the ring buffer mapping of " + trace_pipe_raw_path + " has a meta page this sluice does "
                         "not understand (struct " + std::to_string(LoadShared(&m->meta_struct_len)) +
                         " bytes, " + std::to_string(r->nr_subbufs_) + " sub-buffers of " +
                         std::to_string(r->subbuf_size_) + " bytes)");
  // The meta page may span several system pages: map what it says.
  if (meta_page_size > r->meta_length_) {
    munmap(meta, r->meta_length_);
    r->meta_ = nullptr;
    meta = mmap(nullptr, meta_page_size, PROT_READ, MAP_SHARED, r->trace_fd_.get(), 0);
    if (meta == MAP_FAILED)
      return Status::Error("cannot map " + trace_pipe_raw_path + "'s meta page (" + ErrnoMessage(errno) + ")");
    r->meta_ = static_cast<const uint8_t*>(meta);
    r->meta_length_ = meta_page_size;
  }
  r->data_length_ = static_cast<size_t>(r->subbuf_size_) * r->nr_subbufs_;
  void* data = mmap(nullptr, r->data_length_, PROT_READ, MAP_SHARED, r->trace_fd_.get(), meta_page_size);
  if (data == MAP_FAILED)
    return Status::Error("cannot map the sub-buffers of " + trace_pipe_raw_path + " (" + ErrnoMessage(errno) + ")");
  r->data_ = static_cast<const uint8_t*>(data);
  r->set_trace_fd(r->trace_fd_.get());
  SLUICE_RETURN_IF_ERROR(r->OpenControl());
  return r;
}

FtraceMappedCpuReader::~FtraceMappedCpuReader() {
  StopThread();  // Before the mapping goes: the worker reads it.
  if (data_) munmap(const_cast<uint8_t*>(data_), data_length_);
  if (meta_) munmap(const_cast<uint8_t*>(meta_), meta_length_);
}

FtraceMappedMeta FtraceMappedCpuReader::meta() const {
  FtraceMappedMeta out;
  if (!meta_) return out;
  const auto* m = reinterpret_cast<const TraceBufferMeta*>(meta_);
  out.entries = LoadShared(&m->entries);
  out.overrun = LoadShared(&m->overrun);
  out.read = LoadShared(&m->read);
  out.reader_lost_events = LoadShared(&m->reader_lost_events);
  out.subbuf_size = subbuf_size_;
  out.nr_subbufs = nr_subbufs_;
  return out;
}

FtraceMappedCpuReader::ReadResult FtraceMappedCpuReader::ReadAvailable(bool /*flushing*/, bool* got_data) {
  const auto* m = reinterpret_cast<const TraceBufferMeta*>(meta_);
  // A ring's worth at most, so a writer as fast as the reader cannot keep
  // a flush or a stop waiting.
  for (uint32_t n = 0; n <= nr_subbufs_; n++) {
    // Asked before the swap: until it, the kernel keeps its pages (and
    // overwrites and counts what it cannot hold).
    if (NoRoomFor(subbuf_size_)) return ReadResult::kNoRoom;
    if (ioctl(trace_fd_.get(), kTraceMmapIoctlGetReader) != 0) {
      if (errno == EINTR) continue;
      stats_.Add(&FtraceMappedCpuReaderStats::ioctl_errors);
      return ReadResult::kError;
    }
    const uint32_t id = LoadShared(&m->reader_id);
    if (id >= nr_subbufs_) {
      stats_.Add(&FtraceMappedCpuReaderStats::bad_reader_ids);
      return ReadResult::kError;
    }
    const uint8_t* page = data_ + static_cast<size_t>(id) * subbuf_size_;
    const bool same_page = id == current_id_;
    const size_t resume = same_page ? current_end_ : 0;
    // Nothing new on the page we had, or an empty page: caught up. (The
    // encoder reads the commit again; it can only have grown.)
    FtracePageHeader peek;
    if (FtracePageParser::ParseHeader(header_, page, subbuf_size_, &peek) == FtraceParseStatus::kOk) {
      const size_t end = header_.data_offset + peek.data_size;
      if ((same_page && end <= resume) || (!same_page && peek.data_size == 0 && !peek.missed_events)) {
        current_id_ = id;
        current_end_ = same_page ? resume : end;
        return ReadResult::kCaughtUp;
      }
    }
    const size_t end = encoder()->EncodePage(page, subbuf_size_, resume, writer());
    *got_data = true;
    // The same page twice in one call: the kernel's writer is on the reader
    // page and what it added since is what happened during this read. Caught
    // up. Asking again would find more whenever this thread's own system
    // calls are traced (raw_syscalls enabled in the same instance, as
    // traced_probes leaves the top-level buffer when it is killed): each
    // GET_READER writes its own sys_enter first, and the reader never saw
    // the end of its page (a worker at 100% CPU, a stop that never
    // finished: CI, 2026-12-02).
    const bool writer_on_this_page = same_page && n > 0;
    stats_.Add(&FtraceMappedCpuReaderStats::pages);
    if (same_page) stats_.Add(&FtraceMappedCpuReaderStats::resumed_reads);
    if (end > resume) stats_.Add(&FtraceMappedCpuReaderStats::bytes, end - std::max(resume, size_t{header_.data_offset}));
    current_id_ = id;
    // An invalid header (end 0): nothing more can be read from this page.
    current_end_ = end ? end : subbuf_size_;
    if (writer_on_this_page) return ReadResult::kCaughtUp;
  }
  return ReadResult::kMore;
}

}  // namespace sluice
