// `sluice export --clickhouse` (user/cmd/clickhouse_export.h,
// export_command.h) against a real ClickHouse server (Debian's
// clickhouse-server, one per suite, on loopback): a query over many loaded
// traces answers what `sluice query` answers trace by trace, a second load
// adds nothing, a load that fails midway leaves none of the trace's rows,
// the schema's types and keys, and the one-line errors. Each test uses a
// database of its own. Skips only when no ClickHouse server is installed,
// and fails instead under CI=true.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "tests/child_process_test_util.h"
#include "tests/kernel_test_util.h"
#include "tests/user/cmd/clickhouse_server_test_util.h"
#include "tests/user/cmd/record_test_util.h"
#include "user/cmd/clickhouse_client.h"
#include "user/cmd/clickhouse_export.h"

namespace sluice {
namespace {

using testing::CommandResult;

// Committed traces of several kinds: compact and full sched, the BPF
// source, process stats, atrace slices, track events, upstream's recording.
const std::vector<std::string> kTraces = {
    "tests/data/query/default.pftrace",  "tests/data/query/nocompact.pftrace",
    "tests/data/query/bpf.pftrace",      "tests/data/query/procstats.pftrace",
    "tests/data/query/atrace.pftrace",   "tests/data/query/track_events.pftrace",
    "tests/data/query/upstream.pftrace"};
constexpr char kTrace[] = "tests/data/query/default.pftrace";

// The trace's uuid as a `sluice query` column.
constexpr char kUuid[] = "(SELECT str_value FROM metadata WHERE name = 'trace_uuid')";

std::vector<std::string> SortedLines(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

int LineCount(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

class ClickHouseExportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (testing::ClickHouseServerCommand().empty()) return;
    server_ = new testing::ClickHouseTestServer();
    start_error_ = server_->Start();
  }
  static void TearDownTestSuite() {
    delete server_;  // Stops it: SIGTERM, wait, its directory removed.
    server_ = nullptr;
  }

  void SetUp() override {
    if (testing::ClickHouseServerCommand().empty()) {
      const char* reason = "no ClickHouse server installed (mk/ensure-deps.sh installs clickhouse-server)";
      if (testing::RunningUnderCi()) FAIL() << reason;
      GTEST_SKIP() << reason;
    }
    ASSERT_EQ(start_error_, "") << server_->process().Describe();
    sluice_ = testing::SluiceBinDir() + "/sluice";
    ASSERT_EQ(access(sluice_.c_str(), X_OK), 0) << sluice_ << " not found: build it (make build/sluice)";
    dir_ = testing::MakeTempDir("sluice_clickhouse_test_");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { testing::RemoveTempDir(dir_); }

  CommandResult Export(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {sluice_, "export"};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunToCompletion(argv, dir_);
  }

  // A statement's answer from the test's server, as TabSeparated text.
  std::string ClickHouse(const std::string& database, const std::string& sql) {
    StatusOr<std::unique_ptr<ClickHouseClient>> client = ClickHouseClient::Open(server_->Url(database));
    EXPECT_TRUE(client.ok()) << client.status().message();
    if (!client.ok()) return "";
    StatusOr<std::string> answer = (*client)->Query(sql);
    EXPECT_TRUE(answer.ok()) << sql << ": " << answer.status().message();
    return answer.ok() ? *answer : "";
  }

  // `sluice query TRACE -q SQL` in tsv, without its header line.
  std::string SluiceQuery(const std::string& trace, const std::string& sql) {
    CommandResult result = testing::RunToCompletion({sluice_, "query", trace, "--format", "tsv", "-q", sql}, dir_);
    EXPECT_EQ(result.exit_code, 0) << trace << ": " << result.err;
    return result.out.substr(std::min(result.out.size(), result.out.find('\n') + 1));
  }

  static testing::ClickHouseTestServer* server_;
  static std::string start_error_;
  std::string sluice_, dir_;
};

testing::ClickHouseTestServer* ClickHouseExportTest::server_ = nullptr;
std::string ClickHouseExportTest::start_error_;

TEST_F(ClickHouseExportTest, FleetQueryIsTheUnionOfEachTracesAnswer) {
  std::vector<std::string> args = kTraces;
  args.insert(args.end(), {"--clickhouse", server_->Url("fleet_union"), "--machine", "m1"});
  CommandResult loaded = Export(args);
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
  EXPECT_EQ(LineCount(loaded.out), static_cast<int>(kTraces.size())) << loaded.out;
  EXPECT_EQ(loaded.err, "");

  // Rows per table per trace (tables a trace leaves empty have no rows in
  // ClickHouse's GROUP BY).
  std::string counts_sql, expected_counts;
  for (const std::string& table : ClickHouseExportedTables()) {
    counts_sql += std::string(counts_sql.empty() ? "" : " UNION ALL ") + "SELECT " + kUuid + ", '" + table +
                  "', count(*) FROM " + table;
  }
  for (const std::string& trace : kTraces) {
    for (const std::string& line : SortedLines(SluiceQuery(trace, counts_sql))) {
      if (!line.ends_with("\t0")) expected_counts += line + "\n";
    }
  }
  std::string counts;
  for (const std::string& table : ClickHouseExportedTables()) {
    counts += ClickHouse("fleet_union", "SELECT trace_uuid, '" + table + "', count() FROM " + table +
                                            " GROUP BY trace_uuid FORMAT TabSeparated");
  }
  EXPECT_EQ(SortedLines(counts), SortedLines(expected_counts));

  // CPU time per process, and whole rows of thread and thread_state.
  const std::vector<std::pair<std::string, std::string>> queries = {
      {std::string("SELECT ") + kUuid + ", ifnull(upid, -1), sum(dur) FROM sched JOIN thread USING (utid) GROUP BY upid",
       "SELECT trace_uuid, ifNull(upid, -1), sum(dur) FROM sched ANY INNER JOIN (SELECT trace_uuid, utid, upid FROM "
       "thread) USING (trace_uuid, utid) GROUP BY trace_uuid, upid"},
      {std::string("SELECT ") + kUuid + ", utid, tid, ifnull(name, ''), ifnull(upid, -1) FROM thread",
       "SELECT trace_uuid, utid, tid, ifNull(name, ''), ifNull(upid, -1) FROM thread"},
      {std::string("SELECT ") + kUuid + ", ts, dur, utid, state, ifnull(cpu, -1) FROM thread_state",
       "SELECT trace_uuid, ts, dur, utid, state, ifNull(cpu, -1) FROM thread_state"},
  };
  for (const auto& [sluice_sql, clickhouse_sql] : queries) {
    std::string expected;
    for (const std::string& trace : kTraces) expected += SluiceQuery(trace, sluice_sql);
    const std::vector<std::string> want = SortedLines(expected);
    const std::vector<std::string> got =
        SortedLines(ClickHouse("fleet_union", clickhouse_sql + " FORMAT TabSeparated"));
    EXPECT_GT(want.size(), 10u) << sluice_sql;
    EXPECT_TRUE(got == want) << clickhouse_sql << ": " << got.size() << " rows in ClickHouse, " << want.size()
                             << " from sluice query";
  }
  // Every row is marked with its machine; every trace has its `traces` row.
  EXPECT_EQ(ClickHouse("fleet_union", "SELECT DISTINCT machine FROM sched FORMAT TabSeparated"), "m1\n");
  EXPECT_EQ(ClickHouse("fleet_union", "SELECT count() FROM traces FORMAT TabSeparated"),
            std::to_string(kTraces.size()) + "\n");
}

TEST_F(ClickHouseExportTest, LoadingTwiceDoesNotDuplicate) {
  const std::string url = server_->Url("fleet_twice");
  CommandResult first = Export({kTrace, "--clickhouse", url});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find(": loaded trace "), std::string::npos) << first.out;
  // Again, and twice in one command.
  CommandResult again = Export({kTrace, kTrace, "--clickhouse", url});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(LineCount(again.out), 2);
  const std::vector<std::string> lines = SortedLines(again.out);
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [](const std::string& l) { return l.ends_with("; skipped"); }),
            2)
      << again.out;
  const std::string sched_rows = SluiceQuery(kTrace, "SELECT count(*) FROM sched");
  EXPECT_EQ(ClickHouse("fleet_twice", "SELECT count() FROM sched FORMAT TabSeparated"), sched_rows);
  EXPECT_EQ(ClickHouse("fleet_twice", "SELECT count() FROM traces FORMAT TabSeparated"), "1\n");
  // Staging keeps nothing once a load is done.
  EXPECT_EQ(ClickHouse("fleet_twice", "SELECT count() FROM sluice_staging_sched FORMAT TabSeparated"), "0\n");
}

TEST_F(ClickHouseExportTest, FailedLoadLeavesNoRowsOfTheTrace) {
  // A staging table for stats (loaded after sched, thread_state, slice...)
  // whose `name` cannot take text: its insert fails after the others'.
  ClickHouse("default", "CREATE DATABASE fleet_failed");
  ClickHouse("fleet_failed",
             "CREATE TABLE fleet_failed.sluice_staging_stats (trace_uuid String, machine String, name Int64) "
             "ENGINE = MergeTree PARTITION BY trace_uuid ORDER BY trace_uuid");
  const std::string url = server_->Url("fleet_failed");
  CommandResult failed = Export({kTrace, "--clickhouse", url});
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_EQ(LineCount(failed.err), 1) << failed.err;
  EXPECT_NE(failed.err.find("refused INSERT INTO `fleet_failed`.`sluice_staging_stats`"), std::string::npos)
      << failed.err;
  EXPECT_NE(failed.err.find("Cannot parse"), std::string::npos) << failed.err;
  for (const std::string& table : ClickHouseExportedTables()) {
    EXPECT_EQ(ClickHouse("fleet_failed", "SELECT count() FROM " + table + " FORMAT TabSeparated"), "0\n") << table;
    EXPECT_EQ(ClickHouse("fleet_failed", "SELECT count() FROM " + ClickHouseExporter::StagingTable(table) +
                                             " FORMAT TabSeparated"),
              "0\n")
        << table;
  }
  EXPECT_EQ(ClickHouse("fleet_failed", "SELECT count() FROM traces FORMAT TabSeparated"), "0\n");

  // Fixed, the same trace loads whole.
  ClickHouse("fleet_failed", "DROP TABLE fleet_failed.sluice_staging_stats");
  CommandResult retried = Export({kTrace, "--clickhouse", url});
  ASSERT_EQ(retried.exit_code, 0) << retried.err;
  EXPECT_EQ(ClickHouse("fleet_failed", "SELECT count() FROM stats FORMAT TabSeparated"),
            SluiceQuery(kTrace, "SELECT count(*) FROM stats"));
  EXPECT_EQ(ClickHouse("fleet_failed", "SELECT count() FROM sched FORMAT TabSeparated"),
            SluiceQuery(kTrace, "SELECT count(*) FROM sched"));
}

TEST_F(ClickHouseExportTest, SchemaTypesAndKeys) {
  CommandResult loaded = Export({kTrace, "--clickhouse", server_->Url("fleet_schema")});
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
  const std::string columns = ClickHouse(
      "fleet_schema",
      "SELECT table, name, type FROM system.columns WHERE database = 'fleet_schema' AND "
      "((table = 'sched' AND name IN ('trace_uuid', 'machine', 'ts', 'dur', 'end_state')) OR "
      "(table = 'counter' AND name = 'value') OR (table = 'thread' AND name IN ('id', 'name'))) "
      "ORDER BY table, name FORMAT TabSeparated");
  EXPECT_EQ(columns,
            "counter\tvalue\tNullable(Float64)\n"
            "sched\tdur\tNullable(Int64)\n"
            "sched\tend_state\tNullable(String)\n"
            "sched\tmachine\tString\n"
            "sched\ttrace_uuid\tString\n"
            "sched\tts\tInt64\n"
            "thread\tid\tInt64\n"
            "thread\tname\tNullable(String)\n");
  EXPECT_EQ(ClickHouse("fleet_schema",
                       "SELECT name, engine, partition_key, sorting_key FROM system.tables WHERE database = "
                       "'fleet_schema' AND name IN ('sched', 'thread') ORDER BY name FORMAT TabSeparated"),
            "sched\tMergeTree\ttrace_uuid\ttrace_uuid, ts\n"
            "thread\tMergeTree\ttrace_uuid\ttrace_uuid, id\n");
}

TEST_F(ClickHouseExportTest, ErrorsAreOneLineWithTheFix) {
  const int closed_port = testing::FreeLoopbackPort();
  CommandResult unreachable =
      Export({kTrace, "--clickhouse", "http://127.0.0.1:" + std::to_string(closed_port) + "/?database=x"});
  EXPECT_EQ(unreachable.exit_code, 1);
  EXPECT_EQ(LineCount(unreachable.err), 1) << unreachable.err;
  EXPECT_NE(unreachable.err.find("sluice export: cannot connect to ClickHouse at http://127.0.0.1:" +
                                 std::to_string(closed_port)),
            std::string::npos)
      << unreachable.err;
  EXPECT_NE(unreachable.err.find("start the server"), std::string::npos) << unreachable.err;

  CommandResult bad_url = Export({kTrace, "--clickhouse", "http://127.0.0.1:8123/fleet"});
  EXPECT_EQ(bad_url.exit_code, 2);
  EXPECT_EQ(bad_url.err,
            "sluice export: bad ClickHouse URL 'http://127.0.0.1:8123/fleet': the database goes in ?database=DB, "
            "not in the path (/fleet); give http://HOST:8123/?database=DB (user and password as "
            "http://USER:PASSWORD@HOST...)\n");

  // ClickHouse's own refusal, quoted on the line with the fix.
  CommandResult unknown_user = Export(
      {kTrace, "--clickhouse", "http://nobody@127.0.0.1:" + std::to_string(server_->port()) + "/?database=x"});
  EXPECT_EQ(unknown_user.exit_code, 1);
  EXPECT_EQ(LineCount(unknown_user.err), 1) << unknown_user.err;
  EXPECT_NE(unknown_user.err.find("Unknown user nobody"), std::string::npos) << unknown_user.err;
  EXPECT_NE(unknown_user.err.find("http://USER:PASSWORD@HOST:8123/"), std::string::npos) << unknown_user.err;

  // A trace that fails is named; the others still load.
  const std::string missing = dir_ + "/missing.pftrace";
  CommandResult partly = Export({missing, kTrace, "--clickhouse", server_->Url("fleet_partly")});
  EXPECT_EQ(partly.exit_code, 1);
  EXPECT_NE(partly.err.find("sluice export: " + missing + ": cannot open"), std::string::npos) << partly.err;
  EXPECT_NE(partly.err.find("1 of 2 traces failed to load"), std::string::npos) << partly.err;
  EXPECT_EQ(ClickHouse("fleet_partly", "SELECT count() FROM traces FORMAT TabSeparated"), "1\n");

  // A table that is not a MergeTree (a Distributed one, here a Memory one)
  // is refused before any row is sent.
  ClickHouse("default", "CREATE DATABASE fleet_memory");
  ClickHouse("fleet_memory", "CREATE TABLE sched (trace_uuid String) ENGINE = Memory");
  CommandResult not_merge_tree = Export({kTrace, "--clickhouse", server_->Url("fleet_memory")});
  EXPECT_EQ(not_merge_tree.exit_code, 1);
  EXPECT_NE(not_merge_tree.err.find("fleet_memory.sched is a Memory table, not a MergeTree: point the URL at"),
            std::string::npos)
      << not_merge_tree.err;
  EXPECT_EQ(ClickHouse("fleet_memory", "SELECT count() FROM sched FORMAT TabSeparated"), "0\n");

  CommandResult no_url = Export({kTrace});
  EXPECT_EQ(no_url.exit_code, 2);
  EXPECT_NE(no_url.err.find("no --clickhouse URL"), std::string::npos) << no_url.err;
}

}  // namespace
}  // namespace sluice
