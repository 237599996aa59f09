// End-to-end tests of `sluice query` (user/cmd/query_command.h): the built
// binary run on a small trace written here, as a user runs it. -q and -f
// with --all and each format, an error on line 3 of a file, the shell over a
// pipe, --export reopened with SQLite, and the one-line errors and exit
// codes for bad arguments and unreadable inputs. No kernel needed.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "perfetto/trace/trace_packet.pb.h"
#include "perfetto/trace_summary/file.pb.h"
#include "shm/base/file_util.h"
#include "shm/base/string_util.h"
#include "tests/child_process_test_util.h"
#include "tests/user/cmd/record_test_util.h"
#include "tests/user/query/query_test_util.h"
#include "user/query/engine/query_engine.h"

namespace sluice {
namespace {

using testing::ChildProcess;

using Result = testing::CommandResult;

// Generous: only matters when something is broken.
constexpr uint64_t kTimeoutMs = 120 * 1000;

class QueryCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sluice_ = testing::SluiceBinDir() + "/sluice";
    ASSERT_EQ(access(sluice_.c_str(), X_OK), 0) << sluice_ << " not found: build it (make build/sluice)";
    dir_ = testing::MakeTempDir("sluice_query_test_");
    ASSERT_FALSE(dir_.empty());
    trace_ = dir_ + "/small.pftrace";
    // One process-tree packet: a trace any importer takes.
    perfetto::protos::TracePacket packet;
    packet.set_timestamp(1000);
    packet.set_trusted_packet_sequence_id(1);
    perfetto::protos::ProcessTree::Process* process = packet.mutable_process_tree()->add_processes();
    process->set_pid(1);
    process->set_ppid(0);
    process->add_cmdline("/sbin/init");
    testing::TraceBuilder trace;
    trace.Add(packet);
    ASSERT_TRUE(WriteFileAtomically(trace_, trace.bytes, 0644).ok());
  }
  void TearDown() override { testing::RemoveTempDir(dir_); }

  Result Run(const std::vector<std::string>& args, const std::string& stdin_text = "") {
    std::vector<std::string> argv = {sluice_, "query"};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string in = dir_ + "/stdin";
    EXPECT_TRUE(WriteFileAtomically(in, stdin_text, 0644).ok());
    return testing::RunToCompletion(argv, dir_, in);
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    EXPECT_TRUE(WriteFileAtomically(path, text, 0644).ok());
    return path;
  }

  std::string sluice_, dir_, trace_;
};

const std::string kSampleQuery = std::string(testing::kSampleTableSql) + "SELECT * FROM sample;";

TEST_F(QueryCommandTest, QueryInEachFormat) {
  Result table = Run({trace_, "-q", kSampleQuery});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(table.out.starts_with("                  id  name                          value\n"))
      << table.out;
  EXPECT_NE(table.out.find("                   2  [NULL]                       [NULL]\n"),
            std::string::npos)
      << table.out;

  Result csv = Run({trace_, "--format", "csv", "-q", kSampleQuery});
  EXPECT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out, testing::kSampleCsv);

  Result tsv = Run({trace_, "--format=tsv", "-q", "SELECT 1 AS a, NULL AS b, 'x\ty' AS c"});
  EXPECT_EQ(tsv.out, "a\tb\tc\n1\t\tx\\ty\n");

  Result json = Run({trace_, "--format", "json", "-q", kSampleQuery});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_TRUE(json.out.starts_with("{\"id\":1,\"name\":\"plain\",\"value\":2.5}\n"
                                   "{\"id\":2,\"name\":null,\"value\":null}\n"))
      << json.out;
  EXPECT_EQ(json.err, "");
}

TEST_F(QueryCommandTest, FileWithSeveralStatementsAndAll) {
  const std::string file = WriteFile("queries.sql",
                                     "-- several statements\n"
                                     "CREATE TABLE t(a INTEGER);\n"
                                     "INSERT INTO t VALUES (1), (2);\n"
                                     "SELECT count(*) AS n FROM t;\n"
                                     "SELECT sum(a) AS total FROM t; /* the end */\n");
  Result last = Run({trace_, "-f", file, "--format", "csv"});
  EXPECT_EQ(last.exit_code, 0) << last.err;
  EXPECT_EQ(last.out, "total\r\n3\r\n");

  Result all = Run({trace_, "-f", file, "--format", "csv", "--all"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out, "n\r\n2\r\n\r\ntotal\r\n3\r\n");

  Result json = Run({trace_, "-f", file, "--format", "json", "-a"});
  EXPECT_EQ(json.out, "{\"n\":2}\n{\"total\":3}\n");

  // "-" reads the statements from stdin.
  Result from_stdin = Run({trace_, "-f", "-"}, "SELECT 7 AS seven;");
  EXPECT_EQ(from_stdin.out, "seven\n-----\n    7\n");
}

TEST_F(QueryCommandTest, ErrorOnLineThreeOfAFile) {
  const std::string file = WriteFile("bad.sql",
                                     "SELECT 1;\n"
                                     "-- next: a typo\n"
                                     "SELECT 2 AS two,\n"
                                     "       nope FROM sqlite_schema;\n");
  Result bad = Run({trace_, "-f", file});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.out, "");
  EXPECT_EQ(bad.err, "sluice query: SQL error at line 4 column 8: no such column: nope\n");

  const std::string syntax = WriteFile("syntax.sql", "SELECT 1;\nSELECT 2;\nSELEC 3;\n");
  Result at_line3 = Run({trace_, "-f", syntax});
  EXPECT_EQ(at_line3.exit_code, 1);
  EXPECT_EQ(at_line3.err, "sluice query: SQL error at line 3 column 1: near \"SELEC\": syntax error\n");

  Result q = Run({trace_, "-q", "SELECT 1 +"});
  EXPECT_EQ(q.exit_code, 1);
  EXPECT_EQ(q.err, "sluice query: SQL error at line 1 column 11: incomplete input\n");
}

TEST_F(QueryCommandTest, ShellOverAPipe) {
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(trace_);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  std::string tables;
  for (const std::string& name : (*engine)->TableNames()) tables += name + "\n";

  Result shell = Run({trace_},
                     ".tables\n"
                     "SELECT 1 AS a;\n"
                     "SELECT nope;\n"
                     "SELECT 2\n"
                     "  AS b;\n"
                     ".format csv\n"
                     "SELECT 3 AS c;\n");
  EXPECT_EQ(shell.out, tables + "a\n-\n1\nb\n-\n2\nc\r\n3\r\n");
  EXPECT_EQ(shell.err, "sluice query: SQL error at line 3 column 8: no such column: nope\n");
  EXPECT_EQ(shell.exit_code, 1);

  Result good = Run({trace_, "--format", "json"}, "SELECT 'x' AS s;\n.quit\nSELECT nope;\n");
  EXPECT_EQ(good.out, "{\"s\":\"x\"}\n");
  EXPECT_EQ(good.exit_code, 0) << good.err;
}

// Every row of `table` in `db`, sorted: the same rows compare equal
// whatever order a scan returns them in.
std::vector<std::string> SortedRows(sqlite3* db, const std::string& table) {
  std::vector<std::string> rows = testing::Rows(db, "SELECT * FROM \"" + table + "\"");
  std::sort(rows.begin(), rows.end());
  return rows;
}

TEST_F(QueryCommandTest, ExportThenReopenWithSqlite) {
  const std::string out = dir_ + "/export.sqlite";
  Result exported = Run({trace_, "--export", out});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_TRUE(exported.out.starts_with("exported ")) << exported.out;
  EXPECT_TRUE(exported.out.ends_with(" to " + out + "\n")) << exported.out;

  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(trace_);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  sqlite3* file = nullptr;
  ASSERT_EQ(sqlite3_open_v2(out.c_str(), &file, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::vector<std::string> in_file;
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(file, "SELECT name FROM sqlite_schema WHERE type = 'table'", -1,
                               &stmt, nullptr),
            SQLITE_OK);
  while (sqlite3_step(stmt) == SQLITE_ROW)
    in_file.push_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
  sqlite3_finalize(stmt);
  EXPECT_EQ(in_file, (*engine)->TableNames());
  for (const std::string& table : (*engine)->TableNames())
    EXPECT_EQ(SortedRows(file, table), SortedRows((*engine)->db(), table)) << table;
  sqlite3_close(file);

  // An existing file stays unless --force.
  const std::string before = ReadFile(out).value_or("?");
  Result again = Run({trace_, "--export", out});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.err, "sluice query: " + out +
                           " already exists: remove it, name another file, or pass --force to "
                           "replace it\n");
  EXPECT_EQ(ReadFile(out).value_or("!"), before);
  Result forced = Run({trace_, "--export", out, "--force"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
}

TEST_F(QueryCommandTest, BadArgumentsAndInputs) {
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string err;
  };
  const std::string missing = dir_ + "/missing.pftrace";
  const std::string sql_file = WriteFile("q.sql", "SELECT 1;");
  const std::string empty_dir = dir_ + "/empty";
  ASSERT_EQ(mkdir(empty_dir.c_str(), 0755), 0);
  const std::vector<Case> cases = {
      {{}, 2, "sluice query: no TRACE given: name the trace file to query (see sluice query --help)\n"},
      {{trace_, "--frobnicate"}, 2,
       "sluice query: unknown option '--frobnicate' (see sluice query --help)\n"},
      {{trace_, "--format", "xml", "-q", "SELECT 1"}, 2,
       "sluice query: unknown format 'xml' for --format: use table, csv, tsv or json (see sluice "
       "query --help)\n"},
      {{trace_, "-q"}, 2, "sluice query: -q needs a value (see sluice query --help)\n"},
      // Several TRACEs query each (multi_trace_query_test.cc); SQL is not one.
      {{trace_, "SELECT 1"}, 2,
       "sluice query: no trace file 'SELECT 1': quote SQL given with -q (see sluice query --help)\n"},
      {{trace_, "-q", "SELECT 1", "-f", "x.sql"}, 2,
       "sluice query: -q and -f together: give one of them (see sluice query --help)\n"},
      {{trace_, "--export", "x.sqlite", "-q", "SELECT 1"}, 2,
       "sluice query: --export runs alone: export, then query the trace or the exported file "
       "(see sluice query --help)\n"},
      {{trace_, "--all"}, 2,
       "sluice query: --all applies to -q and -f (the shell prints every result) (see sluice "
       "query --help)\n"},
      {{trace_, "--force"}, 2,
       "sluice query: --force applies to --export (see sluice query --help)\n"},
      {{missing, "-q", "SELECT 1"}, 2,
       "sluice query: cannot open " + missing +
           ": No such file or directory (name a trace file, e.g. one `sluice record -o FILE` "
           "wrote)\n"},
      // A directory stands for its traces (multi_trace_query_test.cc): this one has none.
      {{empty_dir, "-q", "SELECT 1"}, 2,
       "sluice query: " + empty_dir + " holds no trace file: name a directory of Perfetto traces, or trace files\n"},
      {{trace_, "-f", dir_ + "/none.sql"}, 2,
       "sluice query: cannot open " + dir_ +
           "/none.sql (No such file or directory); -f takes a file of SQL\n"},
      {{trace_, "-q", sql_file}, 2,
       "sluice query: -q takes SQL text; for the file " + sql_file +
           " use -f (see sluice query --help)\n"},
  };
  for (const Case& c : cases) {
    Result result = Run(c.args);
    EXPECT_EQ(result.exit_code, c.exit_code) << Join(c.args, " ");
    EXPECT_EQ(result.err, c.err) << Join(c.args, " ");
    EXPECT_EQ(result.out, "") << Join(c.args, " ");
  }
}

TEST_F(QueryCommandTest, SummaryPrintsWhatTraceProcessorShellPrints) {
  // The expected text is trace_processor_shell v58.2's for the same spec
  // and trace (tests/data/query/summary/refresh_expected.sh).
  StatusOr<std::string> expected = ReadFile("tests/data/query/summary/expected/cpu_per_process.loss_kernel.txt");
  ASSERT_TRUE(expected.ok()) << expected.status().message();
  Result text = Run({"tests/data/query/loss_kernel.pftrace", "--summary", "--summary-spec",
                     "user/query/summary/specs/cpu_per_process.textproto", "--summary-metrics-v2", "all"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out, *expected);

  Result binary = Run({"tests/data/query/loss_kernel.pftrace", "--summary", "--summary-spec",
                       "user/query/summary/specs/cpu_per_process.textproto", "--summary-metrics-v2",
                       "cpu_time_per_process", "--summary-format", "binary"});
  EXPECT_EQ(binary.exit_code, 0) << binary.err;
  perfetto::protos::TraceSummary summary;
  ASSERT_TRUE(summary.ParseFromString(binary.out));
  ASSERT_EQ(summary.metric_bundles_size(), 1);
  EXPECT_GT(summary.metric_bundles(0).row_size(), 0);

  Result bad_spec = Run({"tests/data/query/loss_kernel.pftrace", "--summary", "--summary-spec",
                         WriteFile("bad.textproto", "metric_spec { id: 3 }\n"), "--summary-metrics-v2", "all"});
  EXPECT_EQ(bad_spec.exit_code, 2);
  EXPECT_NE(bad_spec.err.find("bad.textproto: line 1 column"), std::string::npos) << bad_spec.err;
}

TEST_F(QueryCommandTest, HttpdOptionsGoWithHttpdOnly) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{trace_, "--http-port", "9002"}, "the --http-* options apply to --httpd"},
      {{trace_, "--http-max-trace-mb", "10"}, "the --http-* options apply to --httpd"},
      {{"--httpd", trace_, "-q", "select 1"}, "--httpd runs alone: clients send the queries"},
      {{"--httpd", "--http-port", "70000"}, "--http-port takes a whole number from 0 to 65535 (got '70000')"},
  };
  for (const auto& [args, message] : cases) {
    Result result = Run(args);
    EXPECT_EQ(result.exit_code, 2) << Join(args, " ");
    EXPECT_EQ(result.err, "sluice query: " + message + " (see sluice query --help)\n") << Join(args, " ");
  }
}

TEST_F(QueryCommandTest, Help) {
  Result help = Run({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(help.out.starts_with("usage: sluice query TRACE")) << help.out;
  EXPECT_NE(help.out.find("--format FORMAT"), std::string::npos);
  EXPECT_NE(help.out.find("table whether or not stdout is a terminal"), std::string::npos);

  ChildProcess top;
  ASSERT_TRUE(top.Start({sluice_, "--help"}, dir_ + "/top.out", dir_ + "/top.err"));
  ASSERT_TRUE(top.Wait(kTimeoutMs));
  EXPECT_NE(top.Stdout().find("  query TRACE "), std::string::npos) << top.Stdout();
}

}  // namespace
}  // namespace sluice
