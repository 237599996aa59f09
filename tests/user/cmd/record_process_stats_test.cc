// `sluice record` with linux.process_stats polling (proc_stats_poll_ms):
// the trace has process_stats packets with every process's memory, and
// Perfetto's memory modules have rows for them. Only /proc is read: no
// tracefs, so this is not a kernel test.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "shm/base/file_util.h"
#include "tests/child_process_test_util.h"
#include "tests/user/cmd/record_test_util.h"
#include "tests/user/query/query_csv_test_util.h"
#include "user/query/engine/query_engine.h"
#include "user/query/engine/sql_statements.h"

namespace sluice {
namespace {

class RecordProcessStatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sluice_ = testing::SluiceBinDir() + "/sluice";
    ASSERT_EQ(access(sluice_.c_str(), X_OK), 0) << sluice_ << " not found: build it (make build/sluice)";
    dir_ = testing::MakeTempDir("sluice_record_process_stats_test_");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string sluice_, dir_;
};

TEST_F(RecordProcessStatsTest, PollingGivesTheMemoryModulesRows) {
  // A short session: the first poll comes at start, so there is at least one.
  ASSERT_TRUE(WriteFileAtomically(dir_ + "/config.pbtx", R"(
buffers { size_kb: 4096 }
data_sources { config { name: "linux.process_stats" process_stats_config {
  scan_all_processes_on_start: true proc_stats_poll_ms: 100 } } }
duration_ms: 300
)", 0644).ok());
  const std::string trace = dir_ + "/trace.pftrace";
  testing::CommandResult r = testing::RunToCompletion({sluice_, "record", "-q", "-c", dir_ + "/config.pbtx", "--txt", "-o", trace}, dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  auto engine = QueryEngine::Open(trace);
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  // This test's own process: alive all along, with memory.
  const std::string pid = std::to_string(getpid());
  auto csv = testing::QueryToTraceProcessorCsv((*engine)->db(),
                                      "INCLUDE PERFETTO MODULE linux.memory.process;\n"
                                      "SELECT count(*) > 0, min(anon_rss) > 0, min(file_rss) >= 0 "
                                      "FROM memory_rss_and_swap_per_process WHERE pid = " + pid + ";",
                                      (*engine)->dialect());
  ASSERT_TRUE(csv.ok()) << csv.status().message();
  EXPECT_NE(csv->find("\n1,1,1\n"), std::string::npos) << *csv;
  auto tracks = testing::QueryToTraceProcessorCsv((*engine)->db(),
                                         "SELECT group_concat(DISTINCT t.name) FROM process_counter_track t "
                                         "JOIN process p USING (upid) WHERE p.pid = " + pid + " "
                                         "AND t.name IN ('mem.rss', 'mem.virt', 'oom_score_adj');",
                                         (*engine)->dialect());
  ASSERT_TRUE(tracks.ok()) << tracks.status().message();
  for (const char* name : {"mem.rss", "mem.virt", "oom_score_adj"})
    EXPECT_NE(tracks->find(name), std::string::npos) << *tracks;
}

}  // namespace
}  // namespace sluice
