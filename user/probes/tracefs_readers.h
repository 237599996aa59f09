// Which other processes read an ftrace buffer: another tracer on the machine.
//
// Reading an ftrace buffer consumes it. Two tracers that read the same
// buffer (upstream Perfetto's traced_probes and sluice both in the top-level
// buffer, or trace-cmd and sluice) each get a share of the events and lose
// the rest, silently; and a recorder that empties the buffer at its start
// (every sluice session does: ftrace_settings.h) throws the other's unread
// events away. So before a session starts, the probes look for other readers
// of the buffer they are about to use and either move to an instance of
// their own or refuse (ftrace_data_source.cc, FTRACE_CONTROL.md "Another
// tracer at the same time"); `sluice doctor` lists them.
//
// A reader is a process that holds one of the buffer's consuming files open:
// per_cpu/cpuN/trace_pipe_raw (trace-cmd, traced_probes, sluice: splice or
// mmap), per_cpu/cpuN/trace_pipe or trace_pipe (cat, bpftrace's
// `cat /sys/kernel/tracing/trace_pipe`). Its open files are found in
// /proc/PID/fd, whose links name the file as that process sees it: under
// /sys/kernel/tracing or /sys/kernel/debug/tracing, which are the mount
// points looked at. A process whose fds cannot be read (gone meanwhile,
// another user's without root) is skipped: the scan is a best effort that
// finds every reader when run as root, as the probes run.
#ifndef SLUICE_USER_PROBES_TRACEFS_READERS_H_
#define SLUICE_USER_PROBES_TRACEFS_READERS_H_

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace sluice {

struct TracefsReader {
  pid_t pid = 0;
  std::string comm;      // /proc/PID/comm, e.g. "traced_probes".
  std::string instance;  // The instance it reads; empty = the top-level buffer.
  uint32_t files = 0;    // How many consuming files of that buffer it holds.
  bool operator==(const TracefsReader&) const = default;
};

// Whether `path` is a consuming file under a tracefs mount point; if so,
// `instance` gets the buffer it belongs to: "" for the top-level buffer, NAME
// for instances/NAME/... Pure, for tests.
bool ParseTracefsReaderPath(std::string_view path, std::string* instance);

// The processes, other than `self` and its children that have not exec'd
// yet, that read a buffer (sorted by pid, then instance). `proc` is /proc;
// tests point it at a fake tree.
std::vector<TracefsReader> FindTracefsReaders(pid_t self, const std::string& proc = "/proc");

// Only those reading `instance` ("" = the top-level buffer).
std::vector<TracefsReader> ReadersOfInstance(const std::vector<TracefsReader>& readers,
                                             std::string_view instance);

// "traced_probes (pid 812), trace-cmd (pid 901)".
std::string DescribeTracefsReaders(const std::vector<TracefsReader>& readers);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_TRACEFS_READERS_H_
