#include "user/cmd/export_command.h"

#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "shm/base/command_line.h"
#include "user/cmd/clickhouse_client.h"
#include "user/cmd/clickhouse_export.h"
#include "user/cmd/trace_path.h"
#include "user/query/engine/query_engine.h"

namespace sluice {
namespace {

constexpr char kCommand[] = "sluice export";

constexpr char kUsage[] =
    "usage: sluice export TRACE... --clickhouse URL [--machine NAME]\n"
    "  Loads the tables of each TRACE (sched, thread_state, thread, process, slice,\n"
    "  counter, the track tables, args, stats, metadata, machine) into a ClickHouse\n"
    "  database over its HTTP interface, under the names and columns sluice query\n"
    "  shows, with trace_uuid and machine columns first in every row, so one query\n"
    "  covers many traces and machines (docs/FLEET.md). Tables are created when\n"
    "  missing. A trace loaded already (its uuid in the traces table) is skipped; a\n"
    "  load that fails leaves none of its rows visible.\n"
    "      --clickhouse URL  the server and database: http://HOST:8123/?database=DB\n"
    "                      (database 'default' if none; created if missing; a user\n"
    "                      as http://USER:PASSWORD@HOST:8123/?database=DB; other\n"
    "                      ClickHouse settings as more URL parameters)\n"
    "      --machine NAME  the machine column's value: default the trace's machine\n"
    "                      name if it has one, else this host's name\n"
    "  -h, --help          this text\n"
    "Prints one line per trace: loaded (tables, rows, rows per second) or skipped.\n"
    "Exit status: 0 every trace loaded or was loaded already; 1 some trace failed\n"
    "(each named on stderr; the others still load) or the server cannot be used;\n"
    "2 bad arguments.\n";

enum : int { kClickHouseOption = kFirstLongOnly, kMachineOption };

struct ExportOptions {
  std::vector<std::string> traces;
  std::string url;
  std::string machine;
};

Status ParseExportOptions(int argc, char** argv, ExportOptions* options) {
  static const struct option kOptions[] = {{"clickhouse", required_argument, nullptr, kClickHouseOption},
                                           {"machine", required_argument, nullptr, kMachineOption},
                                           {"help", no_argument, nullptr, 'h'},
                                           {nullptr, 0, nullptr, 0}};
  SLUICE_RETURN_IF_ERROR(ParseCommandLine(argc, argv, "h", kOptions, [&](const CommandLineArg& arg) {
    switch (arg.id) {
      case 'h':
        return HelpRequested();
      case kClickHouseOption:
        options->url = arg.value;
        break;
      case kMachineOption:
        options->machine = arg.value;
        if (options->machine.empty()) return Status::Error("--machine takes a name, not ''");
        break;
      default:
        options->traces.push_back(arg.value);
    }
    return Status::Ok();
  }));
  if (options->url.empty())
    return Status::Error("no --clickhouse URL: name the server, e.g. --clickhouse 'http://127.0.0.1:8123/?database=fleet'");
  if (options->traces.empty()) return Status::Error("no TRACE given: name the trace files to load");
  return Status::Ok();
}

// The machine a trace came from when --machine does not say: the name its
// machine table gives, else this host's (the case of an export run where
// the trace was recorded, as from an --on-rotate hook).
std::string DefaultMachine(const QueryEngine& engine) {
  sqlite3_stmt* stmt = nullptr;
  std::string name;
  if (sqlite3_prepare_v2(engine.db(), "SELECT name FROM machine WHERE name IS NOT NULL AND name != '' LIMIT 1",
                         -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    name = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  if (!name.empty()) return name;
  char host[256] = "";
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "unknown";
  return host;
}

double SecondsSince(const std::chrono::steady_clock::time_point& start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int RunExportCommand(int argc, char** argv) {
  ExportOptions options;
  Status parsed = ParseExportOptions(argc, argv, &options);
  if (!parsed.ok()) return CommandLineExit(parsed, kCommand, kUsage);
  StatusOr<std::unique_ptr<ClickHouseClient>> client = ClickHouseClient::Open(options.url);
  if (!client.ok()) {
    fprintf(stderr, "%s: %s\n", kCommand, client.status().message().c_str());
    return 2;
  }
  // The server first: unreachable (or refusing the user), it would fail
  // every trace after its import.
  if (Status reached = (*client)->CreateDatabase(); !reached.ok()) {
    fprintf(stderr, "%s: %s\n", kCommand, reached.message().c_str());
    return 1;
  }
  ClickHouseExporter exporter(client->get());
  int failed = 0;
  for (const std::string& trace : options.traces) {
    Status done = [&]() -> Status {
      SLUICE_RETURN_IF_ERROR(CheckTraceReadable(trace));
      SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<QueryEngine> engine, QueryEngine::Open(trace));
      const std::string machine = options.machine.empty() ? DefaultMachine(*engine) : options.machine;
      const auto start = std::chrono::steady_clock::now();
      SLUICE_ASSIGN_OR_RETURN(ClickHouseTraceLoad load, exporter.Load(*engine, trace, machine));
      const double seconds = SecondsSince(start);
      if (load.already_loaded) {
        printf("%s: trace %s is in %s already; skipped\n", trace.c_str(), load.trace_uuid.c_str(),
               (*client)->database().c_str());
      } else {
        printf("%s: loaded trace %s (machine %s) into %s: %zu tables, %llu rows in %.3f s (%.0f rows/s)\n",
               trace.c_str(), load.trace_uuid.c_str(), machine.c_str(), (*client)->database().c_str(), load.tables,
               static_cast<unsigned long long>(load.rows), seconds,
               seconds > 0 ? static_cast<double>(load.rows) / seconds : 0.0);
      }
      fflush(stdout);
      return Status::Ok();
    }();
    if (!done.ok()) {
      ++failed;
      fprintf(stderr, "%s: %s: %s\n", kCommand, trace.c_str(), done.message().c_str());
    }
  }
  if (failed > 0 && options.traces.size() > 1)
    fprintf(stderr, "%s: %d of %zu traces failed to load\n", kCommand, failed, options.traces.size());
  return failed > 0 ? 1 : 0;
}

}  // namespace sluice
