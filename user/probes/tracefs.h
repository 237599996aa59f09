// Tracefs: the kernel's tracing control filesystem, seen through one instance.
//
// Where tracefs lives. Kernels since 4.1 mount it at /sys/kernel/tracing;
// older ones (and some distributions) only expose it through debugfs at
// /sys/kernel/debug/tracing, where the kernel automounts it on first access.
// Open() looks in that order. When /sys/kernel/tracing exists but is empty
// (tracefs not mounted) and we are root, Open() mounts it there
// (`mount -t tracefs nodev /sys/kernel/tracing`). Every failure is one line
// naming the fix: the mount command, or "run as root".
//
// Instances. The top of tracefs is the *root instance*: it owns the ring
// buffer that trace_marker writes from applications land in, and is shared by
// every tracing tool on the machine. instances/<name>/ is a private instance
// with its own ring buffer, events/*/enable files, trace_clock, tracing_on and
// buffer_size_kb; `mkdir` creates one, `rmdir` destroys it (with its buffer).
// A Tracefs object addresses one instance (`dir()`); `root()` stays the mount
// point, since a few files (available_events) exist only there.
//
//   <root>/available_events          "group:name" per line (root only)
//   <dir>/tracing_on                 "0" | "1"
//   <dir>/trace_clock                "[local] global ... boot ..."
//   <dir>/buffer_size_kb             "1408" | "7 (expanded: 1408)" | "X"
//   <dir>/buffer_subbuf_size_kb      "4"   (6.7+; absent before: one page)
//   <dir>/events/<group>/<name>/enable   "0" | "1" (| "0*" | "1*" soft mode)
//   <dir>/events/header_page         sub-buffer layout (see user/probes/ftrace/ftrace_format.h)
//   <dir>/per_cpu/cpuN/trace_pipe_raw   binary pages, consumed on read
//   <dir>/per_cpu/cpuN/stats         counters, see user/probes/ftrace/ftrace_cpu_stats.h
//
// Tests point `root` at a fake tree of plain files under a temp dir. Writes
// therefore truncate plain files that have a size (tracefs files always stat
// as size 0 and must not be opened with O_TRUNC: on set_event and trace that
// would clear state).
//
// Thread-safety: const methods may be called from any thread (each call opens
// the file it needs); the instance create/remove methods are not.
#ifndef SLUICE_USER_PROBES_TRACEFS_H_
#define SLUICE_USER_PROBES_TRACEFS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shm/base/cpu_list.h"
#include "shm/base/file_util.h"
#include "shm/base/scoped_fd.h"
#include "shm/base/status.h"
#include "shm/base/string_util.h"

namespace sluice {

struct TracefsOptions {
  // The tracefs mount point to use; empty = find it (see above). Tests set a
  // fake tree here.
  std::string root;
  // Instance under <root>/instances/ to use; empty = the root instance.
  std::string instance_name;
  // Create the instance if it does not exist (and remember that we did).
  bool create_instance = true;
  // Try to mount tracefs when it is not mounted (needs root).
  bool allow_mount = true;
  // The kernel's list of online CPUs (tests use a file in the fake tree).
  std::string cpu_online_path = "/sys/devices/system/cpu/online";
};

// buffer_size_kb as the kernel prints it.
struct TracefsBufferSize {
  // Per-CPU size in KiB that the buffer has or will have once expanded. 0 if
  // the per-CPU sizes differ ("X").
  uint32_t kb = 0;
  // The kernel keeps a never-used root buffer at a minimum size and prints
  // "7 (expanded: 1408)" until the first event is enabled; the expansion is
  // one-way (the kernel offers no way back), so restore writes `kb`.
  bool expanded = true;
  // Not expanded: the size the buffer has until then (the "7").
  uint32_t unexpanded_kb = 0;
  bool per_cpu_differs = false;  // "X": read per_cpu/cpuN/buffer_size_kb.
  std::string text;              // Verbatim, trimmed.
};

class Tracefs {
 public:
  static constexpr std::string_view kDefaultRoot = "/sys/kernel/tracing";
  static constexpr std::string_view kDebugfsRoot = "/sys/kernel/debug/tracing";

  // Finds (or mounts) tracefs and opens the requested instance, checking that
  // it is writable.
  static StatusOr<std::unique_ptr<Tracefs>> Open(const TracefsOptions& options);

  Tracefs(const Tracefs&) = delete;
  Tracefs& operator=(const Tracefs&) = delete;
  // Does not remove an instance it created: RemoveCreatedInstance() does,
  // after the owner has restored what it changed.
  ~Tracefs() = default;

  const std::string& root() const { return root_; }
  const std::string& dir() const { return dir_; }
  const std::string& instance_name() const { return instance_name_; }
  bool is_root_instance() const { return instance_name_.empty(); }
  bool created_instance() const { return created_instance_; }
  // rmdir's the instance if Open() created it. Idempotent.
  Status RemoveCreatedInstance();

  // <dir>/<rel>, <root>/<rel>, <dir>/per_cpu/cpu<N>/<file>.
  std::string Path(std::string_view rel) const;
  std::string RootPath(std::string_view rel) const;
  std::string PerCpuPath(uint32_t cpu, std::string_view file) const;
  std::string EventsDir() const { return Path("events"); }

  // Whole-file read of an instance file (other paths: ReadFile in
  // shm/base/file_util.h); one write().
  StatusOr<std::string> Read(std::string_view rel) const;
  Status Write(std::string_view rel, std::string_view value) const;
  static Status WritePath(const std::string& path, std::string_view value);
  // Appends `line` to <root>/<rel> (O_APPEND): kprobe_events, where a plain
  // write would delete every probe defined before (other tools' too).
  Status AppendToRootFile(std::string_view rel, std::string_view line) const;
  bool Exists(std::string_view rel) const;

  // --- Typed accessors of the instance's control files. ---
  StatusOr<bool> ReadTracingOn() const;
  Status WriteTracingOn(bool on) const;
  // The selected clock ("boot") and all clocks the kernel offers.
  StatusOr<std::string> ReadTraceClock() const;
  StatusOr<std::vector<std::string>> ReadAvailableClocks() const;
  Status WriteTraceClock(std::string_view clock) const;
  StatusOr<TracefsBufferSize> ReadBufferSize() const;
  StatusOr<uint32_t> ReadPerCpuBufferSizeKb(uint32_t cpu) const;
  Status WriteBufferSizeKb(uint32_t kb) const;
  Status WritePerCpuBufferSizeKb(uint32_t cpu, uint32_t kb) const;
  // buffer_percent (Linux 5.1+): how full a CPU's buffer must be before
  // poll() on its trace_pipe_raw says readable, 0-100.
  StatusOr<uint32_t> ReadBufferPercent() const;
  Status WriteBufferPercent(uint32_t percent) const;
  // Bytes per ring-buffer sub-buffer ("page"): buffer_subbuf_size_kb where it
  // exists (6.7+), else the system page size. The format parser's
  // header_page gives the same number and takes precedence where available.
  StatusOr<uint32_t> ReadSubBufferSize() const;

  // Every event the kernel has, as "group/name" (from <root>/available_events).
  StatusOr<std::vector<std::string>> ReadAvailableEvents() const;
  // events/<group>/<name>/enable. "1" and "1*" read as enabled.
  StatusOr<bool> ReadEventEnabled(std::string_view group, std::string_view name) const;
  Status WriteEventEnabled(std::string_view group, std::string_view name, bool on) const;

  // CPUs online now (from options.cpu_online_path).
  StatusOr<std::vector<uint32_t>> ReadOnlineCpus() const;
  // The same through `*fd`, which the caller keeps (empty: not open yet;
  // opened here): a check every drain period then costs one pread()
  // (PreadFromStart) instead of a path lookup, an open and a close.
  StatusOr<std::vector<uint32_t>> ReadOnlineCpus(ScopedFd* fd) const;
  // CPUs that have a per_cpu/cpuN directory (the kernel makes one per
  // possible CPU).
  std::vector<uint32_t> ListPerCpuDirs() const;

 private:
  Tracefs(std::string root, std::string dir, std::string instance_name,
          bool created_instance, std::string cpu_online_path)
      : root_(std::move(root)),
        dir_(std::move(dir)),
        instance_name_(std::move(instance_name)),
        created_instance_(created_instance),
        cpu_online_path_(std::move(cpu_online_path)) {}

  std::string root_;
  std::string dir_;
  std::string instance_name_;
  bool created_instance_ = false;
  std::string cpu_online_path_;
};

// The tracefs mount to use: options.root if set, else /sys/kernel/tracing,
// else /sys/kernel/debug/tracing; mounts tracefs at the first if neither is
// mounted and options.allow_mount. Errors name the fix.
StatusOr<std::string> FindTracefsRoot(const TracefsOptions& options);

// --- Parsers of tracefs text, exposed for tests. ---

// "[local] global boot" -> "local"; "" if none is bracketed.
std::string ParseSelectedTraceClock(std::string_view text);
// "[local] global boot" -> {"local", "global", "boot"}.
std::vector<std::string> ParseTraceClocks(std::string_view text);
// buffer_size_kb text -> TracefsBufferSize. Error on malformed input.
StatusOr<TracefsBufferSize> ParseBufferSize(std::string_view text);
// True if a buffer that read "7 (expanded: 1408)" (`before`) now reads "7"
// (`after`): the kernel counts it as expanded, yet it kept its boot size.
// Before 6.6 the flag is kernel-wide and an instance resize sets it (see
// FtraceSettings).
bool StayedAtBootSize(const TracefsBufferSize& before, const TracefsBufferSize& after);
// available_events text ("group:name" lines) -> "group/name".
std::vector<std::string> ParseAvailableEvents(std::string_view text);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_TRACEFS_H_
