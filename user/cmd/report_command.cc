#include "user/cmd/report_command.h"

#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sluice_install_paths.h"
#include "shm/base/clock.h"
#include "shm/base/command_line.h"
#include "shm/base/errno_message.h"
#include "shm/base/file_util.h"
#include "user/cmd/trace_path.h"
#include "user/query/engine/query_engine.h"
#include "user/report/report_builder.h"
#include "user/report/report_html.h"
#include "user/report/report_json.h"
#include "user/report/report_sql.h"
#include "user/report/report_text.h"

namespace sluice {

namespace {

constexpr char kCommand[] = "sluice report";

constexpr char kUsage[] =
    "usage: sluice report TRACE [--format text|json] [--timing]\n"
    "       sluice report TRACE --html FILE [--window START,END]\n"
    "       sluice report --list | --sql SECTION\n"
    "  One screen about a trace: its span and size; losses by stage with the fix;\n"
    "  CPU time by process and by thread; per-CPU utilization; scheduling latency\n"
    "  (runnable to running) percentiles for the threads that waited longest;\n"
    "  the longest slices and slice names by total time; counters' ranges.\n"
    "\n"
    "  --format FORMAT   text (the default) or json (one document, for scripts:\n"
    "                    jq '.sections.cpu_by_thread.rows')\n"
    "  --html FILE       write one self-contained page instead (no network needed):\n"
    "                    per-CPU timelines of what ran, a scheduling-latency\n"
    "                    histogram, slices and CPU runs of a window, every table\n"
    "  --window START,END  the page's window, in seconds from the trace's start\n"
    "                    (default: the whole trace; the page shows its first\n"
    "                    20000 slices and runs)\n"
    "  --list            the sections, and where their SQL files are\n"
    "  --sql SECTION     print a section's SQL: start your own query from it with\n"
    "                    sluice query TRACE -f FILE\n"
    "  --timing          print the import's time and the sections' on stderr\n"
    "  -h, --help        this text\n"
    "Every section is one SQL file; `sluice query TRACE -f FILE` runs any of them\n"
    "alone.\n"
    "Exit status: 0 done; 1 a section failed or the output could not be written;\n"
    "2 bad arguments or an unreadable trace.\n";

enum : int { kFormatOption = kFirstLongOnly, kListOption, kSqlOption, kTimingOption, kHtmlOption, kWindowOption };

struct ReportCommandOptions {
  std::string trace;
  bool json = false;
  bool list = false;
  std::optional<std::string> sql_section;
  bool timing = false;
  std::optional<std::string> html_path;
  std::optional<ReportWindow> window;
};

Status ParseReportOptions(int argc, char** argv, ReportCommandOptions* options) {
  static const struct option kOptions[] = {{"format", required_argument, nullptr, kFormatOption},
                                           {"list", no_argument, nullptr, kListOption},
                                           {"sql", required_argument, nullptr, kSqlOption},
                                           {"timing", no_argument, nullptr, kTimingOption},
                                           {"html", required_argument, nullptr, kHtmlOption},
                                           {"window", required_argument, nullptr, kWindowOption},
                                           {"help", no_argument, nullptr, 'h'},
                                           {nullptr, 0, nullptr, 0}};
  std::vector<std::string> operands;
  SLUICE_RETURN_IF_ERROR(ParseCommandLine(argc, argv, "h", kOptions, [&](const CommandLineArg& arg) {
    switch (arg.id) {
      case 'h':
        return HelpRequested();
      case kFormatOption:
        if (std::string(arg.value) == "json") options->json = true;
        else if (std::string(arg.value) != "text")
          return Status::Error(std::string("unknown format '") + arg.value + "' for --format: use text or json");
        break;
      case kListOption:
        options->list = true;
        break;
      case kSqlOption:
        options->sql_section = arg.value;
        break;
      case kTimingOption:
        options->timing = true;
        break;
      case kHtmlOption:
        if (std::string(arg.value).empty()) return Status::Error("--html needs a file name");
        options->html_path = arg.value;
        break;
      case kWindowOption: {
        StatusOr<ReportWindow> window = ParseReportWindow(arg.value);
        if (!window.ok()) return window.status();
        options->window = *window;
        break;
      }
      default:
        operands.push_back(arg.value);
    }
    return Status::Ok();
  }));
  if (options->list || options->sql_section) {
    if (!operands.empty()) return Status::Error("--list and --sql take no TRACE");
    if (options->list && options->sql_section) return Status::Error("--list and --sql together: give one");
    return Status::Ok();
  }
  if (options->window && !options->html_path) return Status::Error("--window applies to --html");
  if (options->html_path && options->json) return Status::Error("--html and --format json together: give one");
  if (operands.empty()) return Status::Error("no TRACE given: name the trace file to report on");
  if (operands.size() > 1)
    return Status::Error("one TRACE at a time (got '" + operands[0] + "' and '" + operands[1] + "')");
  options->trace = operands[0];
  return Status::Ok();
}

// The installed copy of a section's file, or "" when sluice is not installed.
std::string InstalledSqlPath(const ReportSqlFile& file) {
  std::string path = std::string(kSluiceInstallDataDir) + "/report/" + std::string(file.file_name);
  return access(path.c_str(), R_OK) == 0 ? path : "";
}

int ListSections() {
  for (const ReportSqlFile& file : ReportSqlFiles()) {
    const std::string installed = InstalledSqlPath(file);
    printf("%-22s %s%s\n", file.SectionName().c_str(), file.Title().c_str(),
           file.ForHtmlOnly() ? " (HTML page)" : "");
    printf("%-22s %s\n", "", installed.empty() ? "(built in: sluice report --sql NAME prints it)" : installed.c_str());
  }
  return 0;
}

int PrintSql(const std::string& name) {
  const ReportSqlFile* file = FindReportSqlFile(name);
  if (!file) {
    std::string names;
    for (const ReportSqlFile& f : ReportSqlFiles()) names += (names.empty() ? "" : ", ") + f.SectionName();
    fprintf(stderr, "%s: no section '%s': the sections are %s\n", kCommand, name.c_str(), names.c_str());
    return 2;
  }
  fwrite(file->sql.data(), 1, file->sql.size(), stdout);
  return 0;
}

double Seconds(uint64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

int RunReportCommand(int argc, char** argv) {
  ReportCommandOptions options;
  Status parsed = ParseReportOptions(argc, argv, &options);
  if (!parsed.ok()) return CommandLineExit(parsed, kCommand, kUsage);
  if (options.list) return ListSections();
  if (options.sql_section) return PrintSql(*options.sql_section);

  if (Status readable = CheckTraceReadable(options.trace); !readable.ok()) {
    fprintf(stderr, "%s: %s\n", kCommand, readable.message().c_str());
    return 2;
  }
  const uint64_t start_ns = ClockNs(CLOCK_MONOTONIC);
  const uint64_t start_cpu_ns = ClockNs(CLOCK_PROCESS_CPUTIME_ID);
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(options.trace);
  if (!engine.ok()) {
    // The engine names itself as sluice query's; this is sluice report.
    std::string_view message = engine.status().message();
    if (message.starts_with("sluice query: ")) message.remove_prefix(strlen("sluice query: "));
    fprintf(stderr, "%s: %.*s\n", kCommand, static_cast<int>(message.size()), message.data());
    return 2;
  }
  const uint64_t imported_ns = ClockNs(CLOCK_MONOTONIC);
  const uint64_t imported_cpu_ns = ClockNs(CLOCK_PROCESS_CPUTIME_ID);
  if (options.timing)
    fprintf(stderr, "%s: imported %s in %.3f s (%.3f s CPU)\n", kCommand, options.trace.c_str(),
            Seconds(imported_ns - start_ns), Seconds(imported_cpu_ns - start_cpu_ns));

  ReportOptions report_options;
  report_options.html_sections = options.html_path.has_value();
  report_options.window = options.window;
  report_options.dialect = (*engine)->dialect();
  StatusOr<Report> report = BuildReport((*engine)->db(), options.trace, report_options);
  if (!report.ok()) {
    fprintf(stderr, "%s: %s\n", kCommand, report.status().message().c_str());
    return 1;
  }
  if (options.timing)
    fprintf(stderr, "%s: sections in %.3f s (%.3f s CPU)\n", kCommand,
            Seconds(ClockNs(CLOCK_MONOTONIC) - imported_ns),
            Seconds(ClockNs(CLOCK_PROCESS_CPUTIME_ID) - imported_cpu_ns));
  if (options.html_path) {
    // Written whole to a temporary file and renamed: an existing FILE is
    // replaced only by a complete page.
    const std::string page = RenderReportHtml(*report);
    if (Status written = WriteFileAtomically(*options.html_path, page, 0644); !written.ok()) {
      fprintf(stderr, "%s: cannot write %s: %s\n", kCommand, options.html_path->c_str(), written.message().c_str());
      return 1;
    }
    printf("%s: wrote %s (%zu KB)\n", kCommand, options.html_path->c_str(), (page.size() + 1023) / 1024);
  } else if (options.json) {
    const std::string json = ReportToJson(*report, ReportJsonRows::kObjects);
    fwrite(json.data(), 1, json.size(), stdout);
  } else {
    WriteReportText(*report, stdout);
  }
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "%s: %s\n", kCommand, WithErrno("cannot write the report", errno).c_str());
    return 1;
  }
  return 0;
}

}  // namespace sluice
