// Which ftrace buffer a session records from when another tracer is already
// reading the top-level one (user/probes/tracefs_readers.h says why sharing
// a buffer loses events on both sides).
//
//   config names an instance            -> that instance, as configured
//   nobody else reads the top level     -> the top level, as always
//   someone does, and the session needs
//     no trace_marker writes            -> an instance of its own
//     them, and the kernel copies the
//     top level's trace_marker writes
//     into instances (copy_trace_marker,
//     Linux 6.17+)                      -> an instance of its own, copying them
//     them, on an older kernel          -> refuse, naming the other tracer
//
// trace_marker writes (ftrace/print, what atrace and apps write) land in the
// top-level buffer only: the file apps open is the top-level trace_marker.
// An instance of sluice's own is made at start and removed at the end like
// any instance sluice creates (FTRACE_CONTROL.md), so the other tracer's
// buffer, events and settings are never touched.
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_BUFFER_CHOICE_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_BUFFER_CHOICE_H_

#include <string>
#include <vector>

#include "perfetto/config/ftrace/ftrace_config.pb.h"
#include "shm/base/status.h"
#include "user/probes/tracefs_readers.h"

namespace sluice {

struct FtraceBufferChoice {
  // The instance to record from; empty = the top-level buffer.
  std::string instance_name;
  // Set options/copy_trace_marker in that instance.
  bool copy_trace_marker = false;
  // Why the session left the top-level buffer (for the log and the trace):
  // empty when it did not.
  std::string reason;
};

// Whether the session records trace_marker writes: ftrace/print (or
// "print", "ftrace/*") among the events, or atrace categories or apps.
bool FtraceConfigWantsTraceMarker(const perfetto::protos::FtraceConfig& config);

// `top_level_readers`: other processes reading the top-level buffer.
// `kernel_copies_trace_marker`: the kernel has options/copy_trace_marker.
// `own_instance_name`: the name to use for an instance of its own.
StatusOr<FtraceBufferChoice> ChooseFtraceBuffer(const perfetto::protos::FtraceConfig& config,
                                                const std::vector<TracefsReader>& top_level_readers,
                                                bool kernel_copies_trace_marker,
                                                const std::string& own_instance_name);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_BUFFER_CHOICE_H_
