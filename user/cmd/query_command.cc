#include "user/cmd/query_command.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shm/base/command_line.h"
#include "shm/base/errno_message.h"
#include "shm/base/file_util.h"
#include "user/cmd/trace_path.h"
#include "user/cmd/line_reader.h"
#include "user/cmd/multi_trace_query.h"
#include "user/cmd/query_httpd.h"
#include "user/cmd/query_summary.h"
#include "user/query/rpc/trace_processor_rpc.h"
#include "user/query/engine/query_engine.h"
#include "user/query/engine/query_output.h"
#include "user/cmd/query_shell.h"
#include "user/query/engine/sql_statements.h"
#include "user/query/engine/stdlib/stdlib_modules.h"
#include "user/cmd/sqlite_export.h"

namespace sluice {

namespace {

constexpr char kCommand[] = "sluice query";

constexpr char kUsage[] =
    "usage: sluice query TRACE [-q SQL | -f FILE] [--all] [--format FORMAT]\n"
    "       sluice query TRACE... | DIR... (-q SQL | -f FILE) [--all] [--format FORMAT]\n"
    "                    [-j N]\n"
    "       sluice query TRACE --export OUT.sqlite [--force]\n"
    "       sluice query --httpd [--http-port N] [TRACE]\n"
    "       sluice query TRACE --summary --summary-spec SPEC [--summary-spec SPEC...]\n"
    "                    [--summary-metrics-v2 ID,...|all] [--summary-metadata-query ID]\n"
    "                    [--summary-format text|binary]\n"
    "       sluice query --list-modules\n"
    "  SQL over a trace, with the tables of Perfetto's trace_processor and its\n"
    "  PerfettoSQL: INCLUDE PERFETTO MODULE, CREATE PERFETTO TABLE/VIEW/FUNCTION/\n"
    "  MACRO/INDEX, EXTRACT_ARG and the other helpers (docs/QUERY.md).\n"
    "  -q, --query SQL     run SQL: one statement or several separated by ';'\n"
    "  -f, --file FILE     run the statements in FILE (- for stdin); comments allowed\n"
    "  -a, --all           print every statement's result, not only the last one's\n"
    "      --format FORMAT table (the default), csv, tsv or json (one object per row)\n"
    "      --export FILE   copy every table into a new SQLite file that any SQLite\n"
    "                      tool opens; the file appears only when complete\n"
    "      --force         let --export replace an existing FILE\n"
    "      --timing        print the import's, each statement's and the script's time\n"
    "                      on stderr\n"
    "  -j, --jobs N        with several traces, at most N at once (default: as many\n"
    "                      as there are CPUs, fewer if memory is short)\n"
    "      --list-modules  the standard-library modules INCLUDE PERFETTO MODULE takes,\n"
    "                      one line each\n"
    "      --httpd         serve trace_processor's HTTP interface (Perfetto's Python\n"
    "                      API: TraceProcessor(addr='127.0.0.1:9001')) until Ctrl-C;\n"
    "                      TRACE, if given, is loaded first, or a client uploads one\n"
    "      --http-port N   the port (9001, trace_processor's; 0 picks a free one)\n"
    "      --http-ip-address ADDR  listen on ADDR instead of 127.0.0.1 (warns: anyone\n"
    "                      who reaches it can read the trace)\n"
    "      --http-additional-cors-origins O,...  web pages (origins) that may call the\n"
    "                      server besides the Perfetto UI's\n"
    "      --http-max-trace-mb N  the largest upload a client may send (16384)\n"
    "      --summary       print a trace summary (Perfetto's metrics v2) as\n"
    "                      trace_processor_shell --summary does (docs/QUERY.md)\n"
    "      --summary-spec SPEC  a TraceSummarySpec: text format, or binary if named\n"
    "                      *.pb; repeat for several\n"
    "      --summary-metrics-v2 IDS  the metrics to compute (comma-separated), or all;\n"
    "                      none without it\n"
    "      --summary-metadata-query ID  the spec query whose (key, value) rows fill\n"
    "                      the summary's metadata\n"
    "      --summary-format FORMAT  text (the default) or binary (the proto)\n"
    "  -h, --help          this text\n"
    "Without -q or -f: a shell. On a terminal it edits lines and keeps history in\n"
    "~/.sluice_query_history; from a pipe it runs the statements it reads. A\n"
    "statement ends at ';'; .help lists the dot-commands (.tables, .schema TABLE,\n"
    ".modules, .format FORMAT, .quit).\n"
    "Several TRACEs, or a DIR (its trace files, by name): the script runs on each,\n"
    "several at once, and prints one result with a `trace` column first, the rows\n"
    "of each trace together, in the order the traces were named. A trace that\n"
    "fails (import, SQL, other columns) is one line on stderr and adds no rows;\n"
    "the others still answer. --export, --summary, --httpd and the shell take one\n"
    "TRACE.\n"
    "The format is table whether or not stdout is a terminal, so a script sees what\n"
    "you see; scripts that parse the output want --format csv (RFC 4180, what\n"
    "trace_processor_shell -q prints) or json. NULL is [NULL] in a table, an empty\n"
    "field in csv and tsv, null in json.\n"
    "Exit status: 0 done; 1 an SQL statement failed (\"SQL error at line L column\n"
    "C: ...\"), or the export or the output failed, or with several traces any\n"
    "trace failed; 2 bad arguments or unreadable input.\n";

enum : int {
  kFormatOption = kFirstLongOnly,
  kExportOption,
  kForceOption,
  kTimingOption,
  kListModulesOption,
  kHttpdOption,
  kHttpPortOption,
  kHttpAddressOption,
  kHttpOriginsOption,
  kHttpMaxTraceOption,
  kSummaryOption,
  kSummarySpecOption,
  kSummaryMetricsOption,
  kSummaryMetadataOption,
  kSummaryFormatOption,
};

struct QueryOptions {
  std::string trace;
  std::vector<std::string> traces;  // Several TRACEs or a DIR: the operands as given.
  int jobs = 0;
  std::optional<std::string> query;
  std::optional<std::string> file;
  bool all = false;
  OutputFormat format = OutputFormat::kTable;
  std::optional<std::string> export_path;
  bool force = false;
  bool timing = false;
  bool list_modules = false;
  bool httpd = false;
  QueryHttpdOptions http;
  uint64_t http_max_trace_bytes = uint64_t{16384} << 20;
  bool summary = false;
  QuerySummaryOptions summary_options;
};

// A whole number in [min, max] for `option`, or an error naming it.
StatusOr<long long> ParseWholeNumber(const char* text, const char* option, long long min, long long max) {
  char* end = nullptr;
  errno = 0;
  long long value = strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < min || value > max) {
    return Status::Error(std::string(option) + " takes a whole number from " + std::to_string(min) + " to " +
                         std::to_string(max) + " (got '" + text + "')");
  }
  return value;
}

Status ParseQueryOptions(int argc, char** argv, QueryOptions* options) {
  static const struct option kOptions[] = {{"query", required_argument, nullptr, 'q'},
                                           {"file", required_argument, nullptr, 'f'},
                                           {"all", no_argument, nullptr, 'a'},
                                           {"format", required_argument, nullptr, kFormatOption},
                                           {"export", required_argument, nullptr, kExportOption},
                                           {"force", no_argument, nullptr, kForceOption},
                                           {"timing", no_argument, nullptr, kTimingOption},
                                           {"list-modules", no_argument, nullptr, kListModulesOption},
                                           {"httpd", no_argument, nullptr, kHttpdOption},
                                           {"http-port", required_argument, nullptr, kHttpPortOption},
                                           {"http-ip-address", required_argument, nullptr, kHttpAddressOption},
                                           {"http-additional-cors-origins", required_argument, nullptr,
                                            kHttpOriginsOption},
                                           {"http-max-trace-mb", required_argument, nullptr, kHttpMaxTraceOption},
                                           {"summary", no_argument, nullptr, kSummaryOption},
                                           {"summary-spec", required_argument, nullptr, kSummarySpecOption},
                                           {"summary-metrics-v2", required_argument, nullptr, kSummaryMetricsOption},
                                           {"summary-metadata-query", required_argument, nullptr,
                                            kSummaryMetadataOption},
                                           {"summary-format", required_argument, nullptr, kSummaryFormatOption},
                                           {"jobs", required_argument, nullptr, 'j'},
                                           {"help", no_argument, nullptr, 'h'},
                                           {nullptr, 0, nullptr, 0}};
  std::vector<std::string> operands;
  SLUICE_RETURN_IF_ERROR(
      ParseCommandLine(argc, argv, "q:f:aj:h", kOptions, [&](const CommandLineArg& arg) {
        switch (arg.id) {
          case 'h':
            return HelpRequested();
          case 'q':
            if (options->query) return Status::Error("one -q at a time: separate statements with ';'");
            options->query = arg.value;
            break;
          case 'f':
            if (options->file) return Status::Error("one -f at a time");
            options->file = arg.value;
            break;
          case 'a':
            options->all = true;
            break;
          case 'j': {
            StatusOr<long long> jobs = ParseWholeNumber(arg.value, "--jobs", 1, 1024);
            if (!jobs.ok()) return jobs.status();
            options->jobs = static_cast<int>(*jobs);
            break;
          }
          case kFormatOption: {
            std::optional<OutputFormat> format = ParseOutputFormat(arg.value);
            if (!format) {
              return Status::Error(std::string("unknown format '") + arg.value +
                                   "' for --format: use table, csv, tsv or json");
            }
            options->format = *format;
            break;
          }
          case kExportOption:
            options->export_path = arg.value;
            break;
          case kTimingOption:
            options->timing = true;
            break;
          case kListModulesOption:
            options->list_modules = true;
            break;
          case kForceOption:
            options->force = true;
            break;
          case kHttpdOption:
            options->httpd = true;
            break;
          case kHttpPortOption: {
            StatusOr<long long> port = ParseWholeNumber(arg.value, "--http-port", 0, 65535);
            if (!port.ok()) return port.status();
            options->http.port = static_cast<int>(*port);
            break;
          }
          case kHttpAddressOption:
            options->http.ip_address = arg.value;
            break;
          case kHttpOriginsOption:
            for (std::string_view rest = arg.value; !rest.empty();) {
              size_t comma = rest.find(',');
              std::string_view origin = rest.substr(0, comma);
              if (!origin.empty()) options->http.extra_cors_origins.emplace_back(origin);
              rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
            }
            break;
          case kHttpMaxTraceOption: {
            StatusOr<long long> mb = ParseWholeNumber(arg.value, "--http-max-trace-mb", 1, 1LL << 30);
            if (!mb.ok()) return mb.status();
            options->http_max_trace_bytes = static_cast<uint64_t>(*mb) << 20;
            break;
          }
          case kSummaryOption:
            options->summary = true;
            break;
          case kSummarySpecOption:
            options->summary_options.spec_paths.push_back(arg.value);
            break;
          case kSummaryMetricsOption:
            options->summary_options.metric_ids = arg.value;
            break;
          case kSummaryMetadataOption:
            options->summary_options.metadata_query_id = arg.value;
            break;
          case kSummaryFormatOption:
            if (std::string_view(arg.value) != "text" && std::string_view(arg.value) != "binary")
              return Status::Error(std::string("unknown format '") + arg.value + "' for --summary-format: use text or binary");
            options->summary_options.binary = std::string_view(arg.value) == "binary";
            break;
          default:
            operands.push_back(arg.value);
        }
        return Status::Ok();
      }));
  if (options->list_modules) {
    if (!operands.empty() || options->query || options->file || options->export_path)
      return Status::Error("--list-modules runs alone, without a TRACE");
    return Status::Ok();
  }
  const bool http_option_given = options->http.port != QueryHttpdOptions().port ||
                                 options->http.ip_address != QueryHttpdOptions().ip_address ||
                                 !options->http.extra_cors_origins.empty() ||
                                 options->http_max_trace_bytes != QueryOptions().http_max_trace_bytes;
  if (http_option_given && !options->httpd) return Status::Error("the --http-* options apply to --httpd");
  if (options->httpd) {
    if (options->query || options->file || options->export_path || options->all || options->summary)
      return Status::Error("--httpd runs alone: clients send the queries");
    if (NamesManyTraces(operands)) return Status::Error("--httpd takes one TRACE, not several or a directory");
    if (!operands.empty()) options->trace = operands[0];
    return Status::Ok();
  }
  if (operands.empty()) return Status::Error("no TRACE given: name the trace file to query");
  if (NamesManyTraces(operands)) {
    // SQL left unquoted, or after the trace without -q, is not a trace.
    for (const std::string& operand : operands) {
      if (operand.find_first_of(" \t\n") != std::string::npos && !PathExists(operand))
        return Status::Error("no trace file '" + operand + "': quote SQL given with -q");
    }
    const char* one_trace = options->export_path ? "--export"
                            : options->summary   ? "--summary"
                            : !options->query && !options->file ? "the shell (without -q or -f)"
                                                                : nullptr;
    if (one_trace)
      return Status::Error(std::string(one_trace) + " takes one TRACE, not several or a directory: -q or -f query several");
    options->traces = operands;
  } else {
    options->trace = operands[0];
  }
  if (options->query && options->file) return Status::Error("-q and -f together: give one of them");
  // trace_processor_shell's -q takes a file: say so rather than report the
  // file's name as bad SQL.
  if (options->query && std::string_view(*options->query).ends_with(".sql") &&
      IsRegularFile(*options->query)) {
    return Status::Error("-q takes SQL text; for the file " + *options->query + " use -f");
  }
  if (options->export_path && (options->query || options->file))
    return Status::Error("--export runs alone: export, then query the trace or the exported file");
  if (options->all && !options->query && !options->file)
    return Status::Error("--all applies to -q and -f (the shell prints every result)");
  if (options->force && !options->export_path) return Status::Error("--force applies to --export");
  const QuerySummaryOptions& summary = options->summary_options;
  if (!options->summary && (!summary.spec_paths.empty() || summary.metric_ids || !summary.metadata_query_id.empty()))
    return Status::Error("the --summary-* options apply to --summary");
  if (options->summary && (options->query || options->file || options->export_path))
    return Status::Error("--summary runs alone: without -q, -f or --export");
  if (options->summary && summary.spec_paths.empty())
    return Status::Error("--summary needs at least one --summary-spec SPEC");
  return Status::Ok();
}

// The -f script, or stdin's for "-".
StatusOr<std::string> ReadScript(const std::string& path) {
  if (path != "-") {
    if (IsDirectory(path)) return Status::Error(path + " is a directory: -f takes a file of SQL");
    StatusOr<std::string> text = ReadFile(path);
    if (!text.ok()) return Status::Error(text.status().message() + "; -f takes a file of SQL");
    return text;
  }
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0) text.append(buf, n);
  if (ferror(stdin)) return Status::Error(WithErrno("cannot read the SQL from stdin", errno));
  return text;
}

void PrintError(const std::string& message) {
  fflush(stdout);  // The error comes after any rows printed before it.
  // Messages from the engine may already carry the command's name.
  const std::string prefix = std::string(kCommand) + ": ";
  fprintf(stderr, "%s%s\n", message.starts_with(prefix) ? "" : prefix.c_str(), message.c_str());
}

double SecondsSince(const std::chrono::steady_clock::time_point& start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// This process's CPU time (user + system) in seconds: on a loaded machine
// it says what the work cost where wall time says how long it waited.
double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

int RunScript(sqlite3* db, SqlDialect* dialect, const std::string& script, const QueryOptions& options) {
  bool printed = false;
  const auto script_start = std::chrono::steady_clock::now();
  const double script_cpu_start = CpuSeconds();
  Status status = RunSqlScript(db, script, [&](const SqlStatement& statement) {
    auto start = std::chrono::steady_clock::now();
    double cpu_start = CpuSeconds();
    Status ran;
    if (!options.all && !statement.last) {
      ran = StepToEnd(statement.stmt);
    } else {
      if (sqlite3_column_count(statement.stmt) > 0) {
        if (printed) fputs(ResultSeparator(options.format), stdout);
        printed = true;
      }
      ran = WriteQueryResult(statement.stmt, options.format, stdout);
    }
    if (options.timing) {
      fflush(stdout);
      fprintf(stderr, "%s: query: %.1f ms (%.1f ms CPU)\n", kCommand, SecondsSince(start) * 1e3,
              (CpuSeconds() - cpu_start) * 1e3);
    }
    return ran;
  }, 1, dialect);
  if (options.timing) {
    // INCLUDE and CREATE PERFETTO ... run in the dialect, outside any one
    // statement's time above: the script's whole time says what they cost.
    fflush(stdout);
    fprintf(stderr, "%s: script: %.1f ms (%.1f ms CPU)\n", kCommand, SecondsSince(script_start) * 1e3,
            (CpuSeconds() - script_cpu_start) * 1e3);
  }
  if (!status.ok()) {
    PrintError(status.message());
    return 1;
  }
  return 0;
}

// --httpd: the trace first, if one is given, so the server is ready when it
// first answers.
int RunHttpd(const QueryOptions& options) {
  TraceProcessorRpc rpc(options.http_max_trace_bytes);
  if (!options.trace.empty()) {
    if (Status readable = CheckTraceReadable(options.trace); !readable.ok()) {
      PrintError(readable.message());
      return 2;
    }
    if (Status loaded = rpc.LoadTraceFile(options.trace); !loaded.ok()) {
      PrintError(loaded.message());
      return 2;
    }
  }
  return ServeQueryHttp(options.http, &rpc);
}

std::string HistoryPath() {
  const char* home = getenv("HOME");
  return home && *home ? std::string(home) + "/.sluice_query_history" : "";
}

}  // namespace

int RunQueryCommand(int argc, char** argv) {
  QueryOptions options;
  Status parsed = ParseQueryOptions(argc, argv, &options);
  if (!parsed.ok()) return CommandLineExit(parsed, kCommand, kUsage);
  if (options.list_modules) {
    for (const StdlibModule& m : StdlibModules()) printf("%-40s %s\n", m.name.c_str(), m.Description().c_str());
    return 0;
  }

  if (options.httpd) return RunHttpd(options);

  std::vector<std::string> traces;
  if (!options.traces.empty()) {
    std::vector<std::string> notes;
    StatusOr<std::vector<std::string>> expanded = ExpandTraceOperands(options.traces, &notes);
    if (!expanded.ok()) {
      PrintError(expanded.status().message());
      return 2;
    }
    for (const std::string& note : notes) PrintError(note);
    traces = std::move(*expanded);
  }

  // Inputs first, so a typo fails before a long import.
  std::vector<perfetto::protos::TraceSummarySpec> summary_specs;
  if (options.summary) {
    StatusOr<std::vector<perfetto::protos::TraceSummarySpec>> specs =
        ReadTraceSummarySpecs(options.summary_options.spec_paths);
    if (!specs.ok()) {
      PrintError(specs.status().message());
      return 2;
    }
    summary_specs = std::move(*specs);
  }
  std::string script;
  if (options.query) script = *options.query;
  if (options.file) {
    StatusOr<std::string> text = ReadScript(*options.file);
    if (!text.ok()) {
      PrintError(text.status().message());
      return 2;
    }
    script = std::move(*text);
  }
  if (!traces.empty()) {
    MultiTraceQueryOptions many;
    many.traces = std::move(traces);
    many.script = std::move(script);
    many.all = options.all;
    many.format = options.format;
    many.timing = options.timing;
    many.jobs = options.jobs;
    int exit_code = RunMultiTraceQuery(many, stdout, stderr);
    if (fflush(stdout) != 0 || ferror(stdout)) {
      fprintf(stderr, "%s: %s\n", kCommand, WithErrno("cannot write the output", errno).c_str());
      return 1;
    }
    return exit_code;
  }
  // Before the import, which can take a while on a large trace.
  if (options.export_path) {
    if (Status destination = CheckExportDestination(*options.export_path, options.force);
        !destination.ok()) {
      PrintError(destination.message());
      return 1;
    }
  }
  if (Status readable = CheckTraceReadable(options.trace); !readable.ok()) {
    PrintError(readable.message());
    return 2;
  }
  auto import_start = std::chrono::steady_clock::now();
  double import_cpu_start = CpuSeconds();
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(options.trace);
  if (!engine.ok()) {
    PrintError(engine.status().message());
    return 2;
  }
  if (options.timing)
    fprintf(stderr, "%s: imported %s in %.3f s (%.3f s CPU)\n", kCommand, options.trace.c_str(),
            SecondsSince(import_start), CpuSeconds() - import_cpu_start);
  sqlite3* db = (*engine)->db();

  int exit_code = 0;
  if (options.export_path) {
    StatusOr<ExportSummary> exported =
        ExportToSqliteFile(db, (*engine)->TableNames(), *options.export_path, options.force);
    if (!exported.ok()) {
      PrintError(exported.status().message());
      return 1;
    }
    printf("exported %zu tables, %llu rows to %s\n", exported->tables,
           static_cast<unsigned long long>(exported->rows), options.export_path->c_str());
  } else if (options.summary) {
    if (Status written = WriteTraceSummary(**engine, summary_specs, options.summary_options, stdout);
        !written.ok()) {
      PrintError(written.message());
      return 1;
    }
  } else if (options.query || options.file) {
    exit_code = RunScript(db, (*engine)->dialect(), script, options);
  } else {
    std::unique_ptr<LineReader> reader;
    if (isatty(STDIN_FILENO)) {
      StatusOr<std::unique_ptr<LineReader>> terminal = MakeTerminalLineReader(HistoryPath());
      if (terminal.ok()) {
        reader = std::move(terminal.value());
      } else {
        // The shell still works, without editing or history.
        fprintf(stderr, "%s: warning: %s\n", kCommand, terminal.status().message().c_str());
        reader = MakeStreamLineReader(stdin, /*interactive=*/true);
      }
    } else {
      reader = MakeStreamLineReader(stdin);
    }
    QueryShell shell(db, (*engine)->TableNames(), options.format, stdout, stderr, (*engine)->dialect());
    exit_code = shell.Run(*reader);
  }
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "%s: %s\n", kCommand,
            WithErrno("cannot write the output", errno).c_str());
    return 1;
  }
  return exit_code;
}

}  // namespace sluice
