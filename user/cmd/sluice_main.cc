// `sluice`: the command line. One binary, one subcommand per task.
#include <cstdio>
#include <cstring>
#include <string>

#include "user/cmd/doctor_command.h"
#include "user/cmd/ftrace_formats_command.h"
#include "user/cmd/record_command.h"
#include "user/cmd/stats_command.h"

namespace {
constexpr char kUsage[] =
    "usage: sluice COMMAND [ARGS]\n"
    "  record          record a trace (sluice record --help)\n"
    "  stats TRACE     loss and health figures of a trace; exit 1 on data loss\n"
    "  doctor          what this machine supports, with fixes\n"
    "  ftrace-formats  the event layouts sluice reads from tracefs\n"
    "  version\n";
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fputs(kUsage, stderr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "record") return sluice::RunRecordCommand(argc - 1, argv + 1);
  if (cmd == "stats") return sluice::RunStatsCommand(argc - 1, argv + 1);
  if (cmd == "doctor") return sluice::RunDoctorCommand(argc - 1, argv + 1);
  if (cmd == "ftrace-formats") return sluice::RunFtraceFormatsCommand(argc - 1, argv + 1);
  if (cmd == "version" || cmd == "--version") {
    puts("sluice 0.1");
    return 0;
  }
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    fputs(kUsage, stdout);
    return 0;
  }
  fprintf(stderr, "sluice: unknown command '%s'\n%s", cmd.c_str(), kUsage);
  return 2;
}
