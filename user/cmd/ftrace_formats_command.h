// `sluice ftrace-formats [TRACEFS_ROOT] [GROUP[/EVENT]...]`: prints the
// translation table sluice builds from a tracefs: the page and event header
// layout from events/header_page and events/header_event, and for each event
// its id and fields (offset, size, type, kind) with the proto field each is
// written to (see user/probes/ftrace/ftrace_event_translator.h).
//
// TRACEFS_ROOT is a tracefs mount (/sys/kernel/tracing), a copy of one, or
// its events/ directory itself; without it, the running kernel's tracefs
// (/sys/kernel/tracing, then /sys/kernel/debug/tracing). GROUP or
// GROUP/EVENT arguments narrow the listing.
//
// Off the hot path: a diagnostic tool.
#ifndef SLUICE_USER_CMD_FTRACE_FORMATS_COMMAND_H_
#define SLUICE_USER_CMD_FTRACE_FORMATS_COMMAND_H_

#include <string>
#include <vector>

#include "user/probes/ftrace/ftrace_format.h"

namespace sluice {

// argv[0] is "ftrace-formats". Returns the process exit code.
int RunFtraceFormatsCommand(int argc, char** argv);

// The events/ directory for a command-line root: `root` itself if it holds
// header_page, else root/events. Empty root: the running kernel's tracefs.
// Error if neither holds header_page.
StatusOr<std::string> FindEventsDir(const std::string& root);

// The listing, for the events matching `filters` ("group" or "group/name";
// empty: all).
std::string DescribeFtraceFormats(const FtraceFormatTable& table,
                                  const std::vector<std::string>& filters);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_FTRACE_FORMATS_COMMAND_H_
