#include "user/cmd/trace_processor_shell_args.h"

#include "shm/base/command_line.h"

namespace sluice {

const char kTraceProcessorShellUsage[] =
    "usage: sluice-trace-processor [-D] [--http-port N] [-q FILE] [--summary ...] [TRACE]\n"
    "  sluice query under the command line of Perfetto's trace_processor_shell, for\n"
    "  tools that start that program themselves, such as Perfetto's Python API:\n"
    "  TraceProcessor(trace=..., config=TraceProcessorConfig(\n"
    "      bin_path='/usr/bin/sluice-trace-processor')).\n"
    "  -D, --httpd          serve trace_processor's HTTP interface (sluice query --httpd)\n"
    "      --http-port N    its port (9001)\n"
    "      --http-ip-address ADDR, --http-additional-cors-origins O,...\n"
    "                       as for sluice query\n"
    "  -q, --query-file FILE  run the SQL in FILE and print the result as CSV\n"
    "      --summary, --summary-spec FILE, --summary-metrics-v2 IDS,\n"
    "      --summary-metadata-query ID, --summary-format text|binary\n"
    "                       a trace summary, as sluice query --summary\n"
    "      --no-ftrace-raw, --dev, --full-sort, --allow-sql-file-access\n"
    "                       accepted for compatibility; they change nothing in sluice\n"
    "  -v, --version        print the version\n"
    "  -h, --help           this text\n"
    "Other trace_processor_shell options are refused by name. docs/QUERY.md has more.\n";

namespace {

enum : int {
  kHttpPort = kFirstLongOnly,
  kHttpAddress,
  kHttpOrigins,
  kNoOp,
  kSummary,
  kSummarySpec,
  kSummaryMetrics,
  kSummaryMetadata,
  kSummaryFormat,
  kAddSqlPackage,
};

}  // namespace

StatusOr<TraceProcessorShellCommand> TranslateTraceProcessorShellArgs(int argc, char** argv) {
  // Upstream's flags that sluice does without: --no-ftrace-raw (sluice's
  // ftrace_event table holds every event either way), --dev (its developer
  // features are upstream's), --full-sort (sluice sorts every trace fully),
  // --allow-sql-file-access (no SQL function of sluice reads files).
  static const struct option kOptions[] = {{"httpd", no_argument, nullptr, 'D'},
                                           {"http-port", required_argument, nullptr, kHttpPort},
                                           {"http-ip-address", required_argument, nullptr, kHttpAddress},
                                           {"http-additional-cors-origins", required_argument, nullptr, kHttpOrigins},
                                           {"query-file", required_argument, nullptr, 'q'},
                                           {"summary", no_argument, nullptr, kSummary},
                                           {"summary-spec", required_argument, nullptr, kSummarySpec},
                                           {"summary-metrics-v2", required_argument, nullptr, kSummaryMetrics},
                                           {"summary-metadata-query", required_argument, nullptr, kSummaryMetadata},
                                           {"summary-format", required_argument, nullptr, kSummaryFormat},
                                           {"no-ftrace-raw", no_argument, nullptr, kNoOp},
                                           {"dev", no_argument, nullptr, kNoOp},
                                           {"full-sort", no_argument, nullptr, kNoOp},
                                           {"allow-sql-file-access", no_argument, nullptr, kNoOp},
                                           {"add-sql-package", required_argument, nullptr, kAddSqlPackage},
                                           {"version", no_argument, nullptr, 'v'},
                                           {"help", no_argument, nullptr, 'h'},
                                           {nullptr, 0, nullptr, 0}};
  TraceProcessorShellCommand command;
  std::vector<std::string>& out = command.query_args;
  std::vector<std::string> traces;
  Status parsed = ParseCommandLine(argc, argv, "Dq:vh", kOptions, [&](const CommandLineArg& arg) -> Status {
    switch (arg.id) {
      case 'h':
        command.help = true;
        return HelpRequested();
      case 'v':
        command.version = true;
        break;
      case 'D':
        out.push_back("--httpd");
        break;
      case kHttpPort:
      case kHttpAddress:
      case kHttpOrigins:
      case kSummarySpec:
      case kSummaryMetrics:
      case kSummaryMetadata:
      case kSummaryFormat: {
        // The long name as typed may be a unique prefix: pass the full one.
        for (const struct option* o = kOptions; o->name; ++o) {
          if (o->val == arg.id) out.push_back(std::string("--") + o->name);
        }
        out.push_back(arg.value);
        break;
      }
      case kSummary:
        out.push_back("--summary");
        break;
      case 'q':
        out.insert(out.end(), {"-f", arg.value, "--format", "csv"});
        break;
      case kNoOp:
        break;
      case kAddSqlPackage:
        return Status::Error("--add-sql-package is not supported by sluice: INCLUDE PERFETTO MODULE takes "
                             "sluice's standard library only");
      default:
        traces.push_back(arg.value);
    }
    return Status::Ok();
  });
  if (!parsed.ok()) {
    if (command.help) return command;
    return parsed;
  }
  if (traces.size() > 1) return Status::Error("one TRACE at a time");
  out.insert(out.end(), traces.begin(), traces.end());
  return command;
}

}  // namespace sluice
