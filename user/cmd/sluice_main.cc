// `sluice`: the command line. One binary, one subcommand per task; each
// subcommand parses its own arguments (argv[0] is the subcommand's name).
#include <cstdio>
#include <cstring>
#include <string>

#include "shm/base/command_line.h"
#include "user/cmd/clone_command.h"
#include "user/cmd/doctor_command.h"
#include "user/cmd/export_command.h"
#include "user/cmd/ftrace_formats_command.h"
#include "user/cmd/query_command.h"
#include "user/cmd/record_command.h"
#include "user/cmd/report_command.h"
#include "user/cmd/sessions_command.h"
#include "user/cmd/stats_command.h"
#include "user/cmd/trigger_command.h"

namespace {
constexpr char kUsage[] =
    "usage: sluice COMMAND [ARGS]\n"
    "  record          record a trace (sluice record --help)\n"
    "  sessions        the tracing sessions running in sluiced\n"
    "  clone KEY       a snapshot of a running session, which records on (-o FILE)\n"
    "  trigger NAME... fire triggers: start, stop or snapshot sessions waiting for them\n"
    "  stats TRACE     loss and health figures of a trace; exit 1 on data loss\n"
    "  query TRACE     SQL over a trace, or many (TRACE... or DIR): -q SQL, -f FILE,\n"
    "                  a shell, --export\n"
    "  export TRACE... load traces into ClickHouse: --clickhouse URL\n"
    "  report TRACE    one screen about a trace: losses, CPU time, latency, slices\n"
    "  doctor          what this machine supports, with fixes\n"
    "  ftrace-formats  the event layouts sluice reads from tracefs\n"
    "  version         print the version\n"
    "  -h, --help      this text; COMMAND --help for a command's\n";
}  // namespace

int main(int argc, char** argv) {
  static const struct option kOptions[] = {{"help", no_argument, nullptr, 'h'},
                                           {"version", no_argument, nullptr, 'V'},
                                           {nullptr, 0, nullptr, 0}};
  int command = 0;
  bool version = false;
  // Options end at COMMAND: what follows is the subcommand's, which parses it
  // with its own getopt_long (ParseCommandLine resets getopt's state).
  sluice::Status parsed = sluice::ParseCommandLine(
      argc, argv, "hV", kOptions,
      [&](const sluice::CommandLineArg& arg) {
        if (arg.id == 'h') return sluice::HelpRequested();
        if (arg.id == 'V') version = true;
        else if (command == 0) command = arg.index;
        return sluice::Status::Ok();
      },
      sluice::OperandOrder::kOptionsFirst);
  if (!parsed.ok()) return sluice::CommandLineExit(parsed, "sluice", kUsage);
  const std::string cmd = command ? argv[command] : "";
  if (version || cmd == "version") {
    puts("sluice 0.1");
    return 0;
  }
  if (command == 0) {
    fputs(kUsage, stderr);
    return 2;
  }
  const int sub_argc = argc - command;
  char** sub_argv = argv + command;
  if (cmd == "record") return sluice::RunRecordCommand(sub_argc, sub_argv);
  if (cmd == "sessions") return sluice::RunSessionsCommand(sub_argc, sub_argv);
  if (cmd == "clone") return sluice::RunCloneCommand(sub_argc, sub_argv);
  if (cmd == "trigger") return sluice::RunTriggerCommand(sub_argc, sub_argv);
  if (cmd == "stats") return sluice::RunStatsCommand(sub_argc, sub_argv);
  if (cmd == "query") return sluice::RunQueryCommand(sub_argc, sub_argv);
  if (cmd == "export") return sluice::RunExportCommand(sub_argc, sub_argv);
  if (cmd == "report") return sluice::RunReportCommand(sub_argc, sub_argv);
  if (cmd == "doctor") return sluice::RunDoctorCommand(sub_argc, sub_argv);
  if (cmd == "ftrace-formats") return sluice::RunFtraceFormatsCommand(sub_argc, sub_argv);
  if (cmd == "help") {
    fputs(kUsage, stdout);
    return 0;
  }
  return sluice::CommandLineExit(sluice::Status::Error("unknown command '" + cmd + "'"), "sluice",
                                 kUsage);
}
