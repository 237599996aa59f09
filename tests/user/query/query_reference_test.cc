// sluice's query engine against upstream Perfetto's trace processor (issue 12
// items 6 and 7). For every trace in tests/data/query/ and every query in
// tests/data/query/queries/, the engine's answer, printed as
// trace_processor_shell's -q CSV, must equal the shell's own answer stored in
// tests/data/query/expected/<trace>.<query>.csv (refresh_expected.sh writes
// them; the README says how each trace was recorded).
//
// Tests run from the project root; SLUICE_TEST_DATA_DIR overrides tests/data.
// With SLUICE_QUERY_ACTUAL_DIR set, the engine's output of every mismatching
// pair is written there as <trace>.<query>.csv, for `diff -u`.
#include <dirent.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "shm/base/file_util.h"
#include "shm/base/string_util.h"
#include "tests/user/query/query_csv_test_util.h"
#include "user/query/engine/query_engine.h"
#include "user/trace/trace_health.h"

namespace sluice {
namespace {

using testing::DescribeCsvDifference;
using testing::QueryToTraceProcessorCsv;

// The traces (tests/data/query/<name>.pftrace) and queries
// (tests/data/query/queries/<name>.sql); QueryReferenceDataTest checks that
// these lists and the directory agree, so a new file cannot go untested.
const std::vector<std::string>& Traces() {
  static const std::vector<std::string> traces = {
      "default", "nocompact", "bpf", "procstats", "upstream",
      "loss_kernel", "loss_bpf", "loss_bpf_ext", "loss_smb", "loss_central", "atrace", "atrace_rec", "atrace_bpf",
      "arm64", "arm64_bpf", "arm64_loss", "ps_slices_edges", "process_memory", "procstats_memory", "syscalls", "syscalls_x86_64_names",
      "syscalls_aarch64_names", "suspend_resume", "blocked_reason", "syscalls_rec", "generic", "oom_power",
      "rss_stat", "block_kprobe", "session", "tracing_start_preserved", "sysinfo", "cpu_capacity",
      "block_io_rec", "kprobes_rec", "sys_stats_counters", "funcgraph", "android_kernel", "power_probes",
      "sys_stats_memory", "track_events", "cpu_cycles", "irq_names", "critical_path", "streamed",
      "track_events_loss"};
  return traces;
}

std::string QueryDataDir();
std::set<std::string> FilesEndingIn(const std::string& dir, std::string_view suffix);

// Every file of queries/: the core tables' queries, and the PerfettoSQL
// ones (ps_*.sql: modules, operators, functions).
const std::vector<std::string>& Queries() {
  static const std::vector<std::string> queries = [] {
    const std::set<std::string> files = FilesEndingIn(QueryDataDir() + "/queries", ".sql");
    return std::vector<std::string>(files.begin(), files.end());
  }();
  return queries;
}

std::string QueryDataDir() {
  std::string dir = "tests/data";
  if (const char* env = std::getenv("SLUICE_TEST_DATA_DIR")) dir = env;
  return dir + "/query";
}

std::string TracePath(const std::string& trace) {
  return QueryDataDir() + "/" + trace + ".pftrace";
}

// Engines are kept per trace: importing once serves all its queries (the
// queries only read).
QueryEngine* EngineFor(const std::string& trace) {
  static std::map<std::string, std::unique_ptr<QueryEngine>> engines;
  auto it = engines.find(trace);
  if (it != engines.end()) return it->second.get();
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(TracePath(trace));
  if (!engine.ok()) {
    ADD_FAILURE() << "QueryEngine::Open(" << TracePath(trace)
                  << "): " << engine.status().message();
    return nullptr;
  }
  return (engines[trace] = std::move(engine).value()).get();
}

// The files in `dir` whose names end in `suffix`, without it.
std::set<std::string> FilesEndingIn(const std::string& dir, std::string_view suffix) {
  std::set<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (dirent* entry = readdir(d)) {
    std::string_view name = entry->d_name;
    if (name.size() > suffix.size() && name.ends_with(suffix))
      names.insert(std::string(name.substr(0, name.size() - suffix.size())));
  }
  closedir(d);
  return names;
}

struct ReferencePair {
  std::string trace;
  std::string query;
};

void PrintTo(const ReferencePair& pair, std::ostream* os) {
  *os << pair.trace << "." << pair.query;
}

std::vector<ReferencePair> AllPairs() {
  std::vector<ReferencePair> pairs;
  for (const std::string& trace : Traces())
    for (const std::string& query : Queries()) pairs.push_back({trace, query});
  return pairs;
}

// Where sluice differs from upstream on purpose (docs/QUERY.md, "Where it
// differs from Perfetto"), both sides are normalised before comparing:
//
// - stats rows upstream has no name for (sluice's own counters: BPF ring,
//   SMB losses by sequence, the service's fault counters, file checks) are
//   dropped from sluice's side of stats.sql and data_loss.sql;
// - the kernel ring's per-CPU loss counts are data_loss in sluice (so that
//   Perfetto's data-loss query says how many events were lost, as `sluice
//   stats` does) and info upstream (which flags the CPU with
//   ftrace_cpu_has_data_loss instead): their severity is not compared.
// - ps_slices_with_context is not compared on traces whose thread slices
//   carry args (syscalls, CMA): arg set ids are numbered differently
//   there (Compared() says why);
// - metadata_config is not compared on traces whose config has sluice's
//   BpfConfig extension (upstream prints it as unknown field 60001 bytes,
//   sluice by name), nor on upstream's own trace (upstream prints fields in
//   wire order, sluice in field number order: same content).
const std::set<std::string>& SluiceOnlyStats() {
  static const std::set<std::string> names = {
      "bpf_decode_errors", "bpf_ringbuf_dropped", "bpf_unaccounted", "chunks_lost_being_written",
      "chunks_lost_writer_unknown", "ftrace_atrace_errors", "ftrace_bundles_after_lost_events",
      "ftrace_failed_events", "ftrace_parse_errors", "ftrace_stats_end_missing", "ftrace_unknown_events",
      "packets_dropped_before", "packets_unparsable", "producers_disconnected",
      "producers_disconnected_for_faults", "producers_disconnected_not_reading", "trace_file_truncated",
      "trace_stats_missing"};
  return names;
}
const std::set<std::string>& SeverityNotCompared() {
  static const std::set<std::string> names = {"ftrace_cpu_overrun_delta", "ftrace_cpu_commit_overrun_delta",
                                              "ftrace_cpu_dropped_events_delta"};
  return names;
}

// stats.sql / data_loss.sql output ("name",idx,"severity","source",value)
// normalised as described above; other queries' output unchanged.
std::string Normalise(const std::string& query, const std::string& csv, bool sluice_side) {
  if (query != "stats" && query != "data_loss") return csv;
  std::string out;
  ForEachLine(csv, [&](std::string_view line) {
    std::string row(line);
    size_t name_end = row.find("\",");
    std::string name = row.size() > 1 && row[0] == '"' && name_end != std::string::npos ? row.substr(1, name_end - 1) : "";
    if (sluice_side && SluiceOnlyStats().count(name)) return true;
    if (SeverityNotCompared().count(name)) {
      // "name",idx,"severity",...: blank the third field.
      size_t idx_end = row.find(',', name_end + 2);
      size_t severity_end = idx_end == std::string::npos ? idx_end : row.find(',', idx_end + 1);
      if (severity_end != std::string::npos) row = row.substr(0, idx_end + 1) + "\"*\"" + row.substr(severity_end);
      // Upstream lists it only as info: sluice's data_loss row has no
      // counterpart in upstream's data-loss query.
      if (query == "data_loss" && sluice_side) return true;
    }
    out += row;
    out += '\n';
    return true;
  });
  return out;
}

bool Compared(const ReferencePair& pair) {
  static const std::set<std::string> config_not_compared = {"bpf", "loss_bpf", "loss_bpf_ext", "atrace_bpf",
                                                             "arm64_bpf", "upstream"};
  if (pair.query == "metadata_config") return !config_not_compared.count(pair.trace);
  // ps_slices_with_context lists each slice's arg_set_id. Upstream numbers
  // an arg set by its first arg's row in `args`, sluice by the set's own
  // index, so wherever thread slices carry args the ids differ: the same
  // args (slice_args, args_flat_key) under other ids. Syscall slices (and
  // upstream makes a set at the enter and another at the exit) and CMA
  // allocations have args; most thread slices have none.
  static const std::set<std::string> arg_set_ids_differ = {"syscalls", "syscalls_x86_64_names",
                                                           "syscalls_aarch64_names", "syscalls_rec",
                                                           "android_kernel", "track_events"};
  if (pair.query == "ps_slices_with_context") return !arg_set_ids_differ.count(pair.trace);
  return true;
}

class QueryReferenceTest : public ::testing::TestWithParam<ReferencePair> {};

TEST_P(QueryReferenceTest, MatchesTraceProcessor) {
  const ReferencePair& pair = GetParam();
  std::string name = pair.trace + "." + pair.query;
  StatusOr<std::string> sql = ReadFile(QueryDataDir() + "/queries/" + pair.query + ".sql");
  ASSERT_TRUE(sql.ok()) << sql.status().message();
  StatusOr<std::string> expected = ReadFile(QueryDataDir() + "/expected/" + name + ".csv");
  ASSERT_TRUE(expected.ok()) << expected.status().message()
                             << " (tests/data/query/refresh_expected.sh writes it)";
  QueryEngine* engine = EngineFor(pair.trace);
  ASSERT_NE(engine, nullptr);
  StatusOr<std::string> actual = QueryToTraceProcessorCsv(engine->db(), *sql, engine->dialect());
  ASSERT_TRUE(actual.ok()) << "queries/" << pair.query << ".sql on " << pair.trace
                           << ".pftrace: " << actual.status().message();
  std::string difference = DescribeCsvDifference(Normalise(pair.query, *expected, false),
                                                 Normalise(pair.query, *actual, true));
  if (difference.empty()) return;
  std::string kept = "set SLUICE_QUERY_ACTUAL_DIR=DIR to keep sluice's output for diff -u";
  if (const char* dir = std::getenv("SLUICE_QUERY_ACTUAL_DIR")) {
    mkdir(dir, 0755);
    std::string path = std::string(dir) + "/" + name + ".csv";
    Status written = WriteFileAtomically(path, *actual, 0644);
    kept = written.ok() ? "sluice's output: " + path : written.message();
  }
  ADD_FAILURE() << "queries/" << pair.query << ".sql on " << pair.trace
                << ".pftrace differs from trace_processor_shell's tests/data/query/expected/"
                << name << ".csv (" << kept << "): " << difference;
}

std::vector<ReferencePair> ComparedPairs() {
  std::vector<ReferencePair> pairs;
  for (const ReferencePair& pair : AllPairs())
    if (Compared(pair)) pairs.push_back(pair);
  return pairs;
}

INSTANTIATE_TEST_SUITE_P(Query, QueryReferenceTest, ::testing::ValuesIn(ComparedPairs()),
                         [](const ::testing::TestParamInfo<ReferencePair>& info) {
                           return info.param.trace + "_" + info.param.query;
                         });

// Every trace and query in the directory is in the lists above, and every
// pair has its expected output.
TEST(QueryReferenceDataTest, ListsMatchTheDataDirectory) {
  std::string dir = QueryDataDir();
  ASSERT_TRUE(IsDirectory(dir)) << dir << " is missing: run the tests from the project root "
                                << "or set SLUICE_TEST_DATA_DIR";
  std::set<std::string> traces(Traces().begin(), Traces().end());
  std::set<std::string> queries(Queries().begin(), Queries().end());
  EXPECT_EQ(FilesEndingIn(dir, ".pftrace"), traces);
  EXPECT_EQ(FilesEndingIn(dir + "/queries", ".sql"), queries);
  std::set<std::string> expected_files = FilesEndingIn(dir + "/expected", ".csv");
  std::set<std::string> wanted;
  for (const ReferencePair& pair : AllPairs()) wanted.insert(pair.trace + "." + pair.query);
  EXPECT_EQ(expected_files, wanted) << "run tests/data/query/refresh_expected.sh";
}

// Item 7: the data-loss rows of Perfetto's query
//   select name, idx, severity, source, value from stats
//   where severity = 'data_loss' and value != 0
// are the data_loss rows `sluice stats` prints, name for name and value for
// value (a NULL idx is the index -1 of a HealthRow). Checked on every trace,
// not only the loss_* ones: a trace without loss must have no row on both
// sides.
using LossRows = std::set<std::string>;  // "name[idx]=value"

std::string LossRow(std::string_view name, int64_t index, int64_t value) {
  std::string row(name);
  if (index >= 0) row += "[" + std::to_string(index) + "]";
  return row + "=" + std::to_string(value);
}

LossRows SluiceStatsLossRows(const std::string& trace) {
  LossRows rows;
  StatusOr<TraceHealth> health = AnalyzeTraceFile(TracePath(trace));
  if (!health.ok()) {
    ADD_FAILURE() << "AnalyzeTraceFile: " << health.status().message();
    return rows;
  }
  for (const HealthRow& row : health->rows)
    if (row.severity == "data_loss") rows.insert(LossRow(row.name, row.index, row.value));
  return rows;
}

// Rows of data_loss.sql's CSV ("name",idx,"severity","source",value): stat
// names have no comma or quote, so splitting on commas is enough.
LossRows LossRowsFromCsv(std::string_view csv) {
  LossRows rows;
  bool header = true;
  ForEachLine(csv, [&](std::string_view line) {
    if (header) {
      header = false;
      EXPECT_EQ(line, "\"name\",\"idx\",\"severity\",\"source\",\"value\"");
      return true;
    }
    std::vector<std::string_view> fields;
    for (size_t start = 0;;) {
      size_t comma = line.find(',', start);
      fields.push_back(line.substr(start, comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (fields.size() != 5 || fields[0].size() < 2) {
      ADD_FAILURE() << "not a data_loss.sql row: " << line;
      return true;
    }
    std::string_view name = fields[0].substr(1, fields[0].size() - 2);
    int64_t index = fields[1] == "\"[NULL]\"" ? -1 : std::stoll(std::string(fields[1]));
    rows.insert(LossRow(name, index, std::stoll(std::string(fields[4]))));
    return true;
  });
  return rows;
}

std::string Describe(const LossRows& rows) {
  if (rows.empty()) return "(none)";
  return Join(std::vector<std::string>(rows.begin(), rows.end()), ", ");
}

class QueryDataLossTest : public ::testing::TestWithParam<std::string> {
 protected:
  static std::string DataLossSql() {
    StatusOr<std::string> sql = ReadFile(QueryDataDir() + "/queries/data_loss.sql");
    EXPECT_TRUE(sql.ok()) << sql.status().message();
    return sql.value_or("");
  }
};

// Every loss `sluice stats` lists, with its value; besides them only
// Perfetto's own flags for the same losses (ftrace_cpu_has_data_loss per
// CPU, config_write_into_file_discard, traced_flushes_failed, which Perfetto
// counts as data loss and `sluice stats` as an error, perf_cpu_lost_records,
// Perfetto's count of the BPF ring's losses, misplaced_end_event, what the
// import infers from a syscall exit that is not there, and upstream's
// per-buffer sums of the sequences' own loss marks, traced_buf_data_loss_*,
// traced_buf_sequence_packet_loss and traced_buf_incremental_sequences_dropped,
// which sluice stats lists per sequence as packets_dropped_before;
// long_trace_mode_bytes_overwritten, upstream's count in bytes of a
// streamed buffer's overwrites, which sluice stats counts in chunks as
// traced_buf_chunks_overwritten), so that
// the same query says as much as upstream's. (How sluice's rows compare with upstream's is
// data_loss.sql in QueryReferenceTest.)
TEST_P(QueryDataLossTest, EngineListsEveryLossSluiceStatsLists) {
  QueryEngine* engine = EngineFor(GetParam());
  ASSERT_NE(engine, nullptr);
  StatusOr<std::string> csv = QueryToTraceProcessorCsv(engine->db(), DataLossSql());
  ASSERT_TRUE(csv.ok()) << csv.status().message();
  LossRows from_query = LossRowsFromCsv(*csv);
  LossRows from_stats = SluiceStatsLossRows(GetParam());
  for (const std::string& row : from_stats) {
    // A streamed buffer's overwrites: upstream's loss row counts bytes.
    if (row.starts_with("traced_buf_chunks_overwritten[")) {
      const std::string buffer = row.substr(row.find('['), row.find(']') - row.find('[') + 1);
      bool in_bytes = false;
      for (const std::string& q : from_query) in_bytes |= q.starts_with("long_trace_mode_bytes_overwritten" + buffer);
      if (in_bytes) continue;
    }
    EXPECT_TRUE(from_query.count(row)) << "sluice stats lists " << row << "; sluice query's data-loss rows: "
                                       << Describe(from_query);
  }
  for (const std::string& row : from_query) {
    if (from_stats.count(row)) continue;
    std::string name = row.substr(0, row.find_first_of("[="));
    EXPECT_TRUE(name == "ftrace_cpu_has_data_loss" || name == "config_write_into_file_discard" ||
                name == "traced_flushes_failed" || name == "perf_cpu_lost_records" || name == "misplaced_end_event" ||
                name.starts_with("traced_buf_data_loss_") || name == "traced_buf_sequence_packet_loss" ||
                name == "traced_buf_incremental_sequences_dropped" || name == "long_trace_mode_bytes_overwritten")
        << "sluice query lists " << row << ", which sluice stats does not: " << Describe(from_stats);
  }
}

INSTANTIATE_TEST_SUITE_P(Query, QueryDataLossTest, ::testing::ValuesIn(Traces()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace sluice
