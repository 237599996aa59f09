// sluice-trace-processor: `sluice query` under trace_processor_shell's
// command line (user/cmd/trace_processor_shell_args.h).
#include <cstdio>
#include <string>
#include <vector>

#include "shm/base/command_line.h"
#include "user/cmd/query_command.h"
#include "user/cmd/trace_processor_shell_args.h"

int main(int argc, char** argv) {
  sluice::StatusOr<sluice::TraceProcessorShellCommand> command =
      sluice::TranslateTraceProcessorShellArgs(argc, argv);
  if (!command.ok()) return sluice::CommandLineExit(command.status(), "sluice-trace-processor",
                                                    sluice::kTraceProcessorShellUsage);
  if (command->help) {
    fputs(sluice::kTraceProcessorShellUsage, stdout);
    return 0;
  }
  if (command->version) {
    puts("sluice-trace-processor 0.1 (sluice query; trace_processor RPC v14)");
    return 0;
  }
  std::vector<char*> query_argv = {const_cast<char*>("sluice query")};
  for (std::string& arg : command->query_args) query_argv.push_back(arg.data());
  query_argv.push_back(nullptr);
  return sluice::RunQueryCommand(static_cast<int>(query_argv.size()) - 1, query_argv.data());
}
