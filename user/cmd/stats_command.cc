#include "user/cmd/stats_command.h"

#include <cstdio>
#include <string>
#include <vector>

#include "shm/base/command_line.h"
#include "user/trace/trace_health.h"

namespace sluice {

namespace {

constexpr char kUsage[] =
    "usage: sluice stats TRACE_FILE\n"
    "  prints loss and health figures; for a trace with relayed machines, a\n"
    "  line per machine (what its relay dropped, its clock offset and error)\n"
    "Exit status: 0 nothing lost; 1 data was lost, or the trace has no TraceStats\n"
    "(it did not end cleanly: losses after its last flush are unknown); 2 not a\n"
    "trace (unreadable, empty or corrupt from its first byte).\n";

}  // namespace

int RunStatsCommand(int argc, char** argv) {
  static const struct option kOptions[] = {{"help", no_argument, nullptr, 'h'},
                                           {nullptr, 0, nullptr, 0}};
  std::vector<std::string> files;
  Status parsed = ParseCommandLine(argc, argv, "h", kOptions, [&](const CommandLineArg& arg) {
    if (arg.id == 'h') return HelpRequested();
    files.push_back(arg.value);
    return Status::Ok();
  });
  if (parsed.ok() && files.size() != 1)
    parsed = Status::Error(files.empty() ? "no TRACE_FILE given" : "one TRACE_FILE at a time");
  if (!parsed.ok()) return CommandLineExit(parsed, "sluice stats", kUsage);
  const char* path = files[0].c_str();
  auto health = AnalyzeTraceFile(path);
  if (!health.ok()) {
    fprintf(stderr, "sluice stats: %s\n", health.status().message().c_str());
    return 2;
  }
  if (health->file.bytes == 0) {
    fprintf(stderr, "sluice stats: %s is empty (0 bytes): not a trace; a recording writes at least its config\n",
            path);
    return 2;
  }
  printf("%s: %llu packets, %llu bytes, %llu ftrace events, %llu sequences%s\n", path,
         static_cast<unsigned long long>(health->file.packets),
         static_cast<unsigned long long>(health->file.bytes),
         static_cast<unsigned long long>(health->ftrace_events),
         static_cast<unsigned long long>(health->sequences),
         health->file.truncated ? " (truncated: valid up to the last complete packet)" : "");
  fputs(FormatFtraceReadPaths(*health).c_str(), stdout);
  fputs(FormatFtracePeakFill(*health).c_str(), stdout);
  fputs(FormatFtraceWatermark(*health).c_str(), stdout);
  fputs(FormatMachines(*health).c_str(), stdout);
  fputs(FormatHealthTable(*health).c_str(), stdout);
  uint64_t lost = health->data_loss_total();
  if (lost) printf("data loss: %llu (see the rows with severity data_loss)\n",
                   static_cast<unsigned long long>(lost));
  if (!health->has_trace_stats) printf("losses unknown: no TraceStats (see trace_stats_missing)\n");
  return lost || !health->has_trace_stats ? 1 : 0;
}

}  // namespace sluice
