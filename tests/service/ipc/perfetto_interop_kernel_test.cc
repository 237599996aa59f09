// sluiced with upstream Perfetto's own programs (../shared/tools/perfetto,
// built from upstream's source; CI has them): upstream's traced_probes
// connects to sluiced's producer socket as it would to traced's
// (PERFETTO_PRODUCER_SOCK_NAME), registers its data sources and records
// ftrace into a session that `sluice record --daemon` runs. Every numbered
// trace_marker line must be in the trace exactly once, and upstream's
// trace_processor must load the trace with no error and no loss.
//
// traced_probes leaves tracefs changed (trace_clock boot, its buffer size):
// the test puts back what it found.
#include <signal.h>
#include <unistd.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "service/ipc/consumer_ipc_client.h"
#include "tests/child_process_test_util.h"
#include "tests/kernel_test_util.h"
#include "tests/user/cmd/record_test_util.h"
#include "tests/user/probes/tracefs_test_util.h"

namespace sluice {
namespace {

using testing::ChildProcess;
using testing::NowMs;
using testing::ScaledTimeoutMs;

class PerfettoInteropKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why_not = testing::WhyRecordTestsCannotRun(bin_dir_);
    if (!why_not.empty()) SLUICE_KERNEL_SKIP(why_not);
    if (access((upstream_dir_ + "/traced_probes").c_str(), X_OK) != 0 ||
        access((upstream_dir_ + "/trace_processor_shell").c_str(), X_OK) != 0) {
      if (testing::RunningUnderCi()) FAIL() << "no upstream Perfetto tools at " << upstream_dir_;
      GTEST_SKIP() << "no upstream Perfetto tools at " << upstream_dir_ << " (../shared/tools/perfetto)";
    }
    dir_ = testing::MakeTempDir("sluice-perfetto-interop-");
    ASSERT_FALSE(dir_.empty());
    before_ = testing::ReadTracefsState();
    armed_ = true;
  }

  void TearDown() override {
    for (ChildProcess* p : {&recorder_, &probes_, &sluiced_})
      if (p->running()) p->Terminate(ScaledTimeoutMs(30000));
    if (!armed_) return;
    testing::RestoreTracefsState(before_);  // What traced_probes left changed.
    const testing::TracefsState after = testing::ReadTracefsState();
    EXPECT_EQ(after, before_) << "tracefs not left as found\nbefore: " << before_.ToString()
                              << "\nafter:  " << after.ToString();
    if (!HasFailure()) testing::RemoveTempDir(dir_);
    else fprintf(stderr, "kept %s for inspection\n", dir_.c_str());
  }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // sluiced on sockets in the test's directory, and upstream's traced_probes
  // told to find it there; returns once sluiced lists traced_probes'
  // ftrace data source.
  bool StartSluicedAndUpstreamProbes() {
    if (!sluiced_.Start({bin_dir_ + "/sluiced", "--producer-socket", Path("producer.sock"),
                         "--consumer-socket", Path("consumer.sock")},
                        Path("sluiced.out"), Path("sluiced.err"))) {
      ADD_FAILURE() << "cannot start sluiced";
      return false;
    }
    // traced_probes retries until the socket takes its connection.
    if (!probes_.Start({"/usr/bin/env", "PERFETTO_PRODUCER_SOCK_NAME=" + Path("producer.sock"),
                        upstream_dir_ + "/traced_probes"},
                       Path("probes.out"), Path("probes.err"))) {
      ADD_FAILURE() << "cannot start traced_probes";
      return false;
    }
    const uint64_t deadline = NowMs() + ScaledTimeoutMs(60000);
    while (NowMs() < deadline && sluiced_.running() && probes_.running()) {
      auto consumer = ConsumerIpcClient::Connect(Path("consumer.sock"));
      if (consumer.ok()) {
        auto state = consumer.value()->QueryServiceState();
        if (state.ok())
          for (const auto& ds : state->data_sources)
            if (ds.name == "linux.ftrace") return true;
      }
      usleep(50 * 1000);
    }
    ADD_FAILURE() << "traced_probes' linux.ftrace never registered with sluiced:\n"
                  << sluiced_.Describe() << "\n" << probes_.Describe();
    return false;
  }

  // Runs upstream's trace_processor on the trace with `sql`; its CSV rows.
  std::vector<std::string> UpstreamQuery(const std::string& trace, const std::string& sql) {
    const std::string query_file = Path("query.sql");
    EXPECT_TRUE(testing::WriteTracefsFile(query_file, sql, O_CREAT | O_TRUNC));
    testing::CommandResult r = testing::RunToCompletion(
        {upstream_dir_ + "/trace_processor_shell", "-q", query_file, trace}, dir_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> rows;
    std::istringstream lines(r.out);
    std::string line;
    std::getline(lines, line);  // The header.
    while (std::getline(lines, line))
      if (!line.empty()) rows.push_back(line);
    return rows;
  }

  const std::string bin_dir_ = testing::SluiceBinDir();
  const std::string upstream_dir_ = bin_dir_ + "/../../shared/tools/perfetto";
  std::string dir_;
  testing::TracefsState before_;
  bool armed_ = false;
  ChildProcess sluiced_, probes_, recorder_;
};

TEST_F(PerfettoInteropKernelTest, UpstreamTracedProbesRecordsEveryMarkerOnceThroughSluiced) {
  ASSERT_TRUE(StartSluicedAndUpstreamProbes());
  const std::string trace = Path("trace.pftrace");
  ASSERT_TRUE(recorder_.Start({bin_dir_ + "/sluice", "record", "--daemon", "--consumer-socket",
                               Path("consumer.sock"), "-t", "1h", "-q", "--file-lag", "1s",
                               "ftrace/print", "-o", trace},
                              Path("record.out"), Path("record.err")));
  // Markers in atrace's form ("I|pid|name": an instant), which upstream's
  // trace processor turns into slices by name.
  const std::string tag = "interop-" + std::to_string(getpid());
  const pid_t pid = getpid();
  auto marker = [&](const std::string& name) { return "I|" + std::to_string(pid) + "|" + name; };
  ASSERT_TRUE(testing::WriteMarkerUntilInFile(marker(tag + "-start"), trace,
                                              ScaledTimeoutMs(120000), &recorder_))
      << recorder_.Describe() << "\n" << probes_.Describe();
  constexpr int kMarkers = 300;
  const int fd = open((std::string(Tracefs::kDefaultRoot) + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  for (int i = 0; i < kMarkers; i++)
    ASSERT_TRUE(testing::WriteTraceMarker(fd, marker(tag + "-" + std::to_string(i))));
  close(fd);
  // The last marker in the file: every one before it went through the
  // kernel buffer, traced_probes, the SMB and sluiced.
  ASSERT_TRUE(testing::WriteMarkerUntilInFile(marker(tag + "-end"), trace, ScaledTimeoutMs(120000),
                                              &recorder_))
      << recorder_.Describe();
  recorder_.Signal(SIGINT);
  ASSERT_TRUE(recorder_.Wait(ScaledTimeoutMs(60000))) << recorder_.Describe();
  EXPECT_TRUE(recorder_.exited_normally_with(0)) << recorder_.Describe();

  std::map<std::string, int> counts;
  for (const std::string& row : UpstreamQuery(trace, "select name, count(*) from slice where name like '" +
                                                         tag + "-%' group by name;"))
    counts[row.substr(1, row.find('"', 1) - 1)] = std::stoi(row.substr(row.rfind(',') + 1));
  int once = 0;
  for (int i = 0; i < kMarkers; i++) {
    const int n = counts[tag + "-" + std::to_string(i)];
    EXPECT_LE(n, 1) << "marker " << i << " is in the trace " << n << " times";
    once += n == 1;
  }
  EXPECT_EQ(once, kMarkers) << "markers in the trace exactly once";
  EXPECT_EQ(UpstreamQuery(trace, "select name, idx, value from stats where severity in "
                                 "('error', 'data_loss') and value > 0;"),
            std::vector<std::string>{})
      << "upstream's trace processor reports errors or losses";
  // The trace names traced_probes' sequences as a producer of sluiced's.
  EXPECT_NE(sluiced_.Stderr().find("'perfetto.traced_probes' connected"), std::string::npos)
      << sluiced_.Describe();
}

}  // namespace
}  // namespace sluice
