// The command line of upstream Perfetto's trace_processor_shell, as far as
// sluice serves it, turned into `sluice query`'s: what lets a tool that
// starts trace_processor_shell itself (Perfetto's Python API, given
// bin_path) start sluice-trace-processor instead.
//
//   -D, --httpd               --httpd
//   --http-port N, --http-ip-address A, --http-additional-cors-origins O
//                             the same
//   -q FILE                   -f FILE --format csv (upstream's -q prints CSV)
//   --summary, --summary-spec F, --summary-metrics-v2 IDS,
//   --summary-metadata-query ID, --summary-format F
//                             the same
//   --no-ftrace-raw, --dev, --full-sort, --allow-sql-file-access
//                             accepted, nothing to do (below)
//   TRACE                     TRACE
//
// Anything else is refused with a message naming it, rather than ignored:
// a flag that changes upstream's answers must not silently not apply.
#ifndef SLUICE_USER_CMD_TRACE_PROCESSOR_SHELL_ARGS_H_
#define SLUICE_USER_CMD_TRACE_PROCESSOR_SHELL_ARGS_H_

#include <string>
#include <vector>

#include "shm/base/status.h"

namespace sluice {

struct TraceProcessorShellCommand {
  bool help = false;
  bool version = false;
  // `sluice query`'s arguments (without "query").
  std::vector<std::string> query_args;
};

StatusOr<TraceProcessorShellCommand> TranslateTraceProcessorShellArgs(int argc, char** argv);

// The usage text of sluice-trace-processor.
extern const char kTraceProcessorShellUsage[];

}  // namespace sluice

#endif  // SLUICE_USER_CMD_TRACE_PROCESSOR_SHELL_ARGS_H_
