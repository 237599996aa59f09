// sluiced with upstream Perfetto's own programs (../shared/tools/perfetto,
// built from upstream's source; CI has them), each finding sluiced's sockets
// as it would find traced's (PERFETTO_PRODUCER_SOCK_NAME,
// PERFETTO_CONSUMER_SOCK_NAME):
//   - upstream traced_probes records into a session `sluice record --daemon`
//     runs;
//   - upstream's `perfetto` command records through sluiced, with
//     sluice-probes and with upstream traced_probes as the producer, and
//     detaches from and attaches to a session;
// Every numbered trace_marker line must be in the trace exactly once, and
// upstream's trace_processor must load the trace with no error and no loss.
//
// traced_probes leaves tracefs changed (trace_clock boot, its buffer size):
// the test puts back what it found.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
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

  // sluiced on sockets in the test's directory, and a producer of kernel
  // events told to find it there (upstream's traced_probes, or
  // sluice-probes); returns once sluiced lists its ftrace data source.
  bool StartSluicedAndProbes(bool upstream_probes) {
    if (!sluiced_.Start({bin_dir_ + "/sluiced", "--producer-socket", Path("producer.sock"),
                         "--consumer-socket", Path("consumer.sock")},
                        Path("sluiced.out"), Path("sluiced.err"))) {
      ADD_FAILURE() << "cannot start sluiced";
      return false;
    }
    // Both retry until the socket takes their connection.
    const std::vector<std::string> probes =
        upstream_probes ? Upstream("traced_probes")
                        : std::vector<std::string>{bin_dir_ + "/sluice-probes", "--producer-socket",
                                                   Path("producer.sock")};
    if (!probes_.Start(probes, Path("probes.out"), Path("probes.err"))) {
      ADD_FAILURE() << "cannot start " << probes.back();
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

  // An upstream program, told where sluiced's sockets are.
  std::vector<std::string> Upstream(const std::string& tool) const {
    return {"/usr/bin/env", "PERFETTO_PRODUCER_SOCK_NAME=" + Path("producer.sock"),
            "PERFETTO_CONSUMER_SOCK_NAME=" + Path("consumer.sock"), upstream_dir_ + "/" + tool};
  }

  // Markers in atrace's form ("I|pid|name": an instant), which upstream's
  // trace processor turns into slices by name.
  std::string Marker(const std::string& name) const {
    return "I|" + std::to_string(getpid()) + "|" + tag_ + "-" + name;
  }

  // Writes kMarkers numbered markers while `recorder` records into `trace`
  // (a file written while recording): first a marker until it shows in the
  // file (the whole path is live), the numbered ones, then one more until it
  // shows (every one before it went through the kernel buffer, the producer,
  // the SMB and sluiced).
  void WriteMarkers(const std::string& trace, ChildProcess* recorder) {
    ASSERT_TRUE(testing::WriteMarkerUntilInFile(Marker("start"), trace, ScaledTimeoutMs(120000), recorder))
        << recorder->Describe() << "\n" << probes_.Describe() << "\n" << sluiced_.Describe();
    WriteNumberedMarkers();
    if (HasFatalFailure()) return;
    ASSERT_TRUE(testing::WriteMarkerUntilInFile(Marker("end"), trace, ScaledTimeoutMs(120000), recorder))
        << recorder->Describe();
  }

  // Markers 0 .. kMarkers-1.
  void WriteNumberedMarkers() {
    const int fd = open((std::string(Tracefs::kDefaultRoot) + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    for (int i = 0; i < kMarkers; i++) EXPECT_TRUE(testing::WriteTraceMarker(fd, Marker(std::to_string(i))));
    close(fd);
  }

  // Every numbered marker is in `trace` exactly once, and upstream's trace
  // processor reports no error and no loss; `sluice query` reads the same
  // slices from it.
  void ExpectEveryMarkerOnce(const std::string& trace) {
    const std::string sql = "select name, count(*) from slice where name like '" + tag_ +
                            "-%' group by name order by name;";
    std::map<std::string, int> counts;
    const std::vector<std::string> rows = UpstreamQuery(trace, sql);
    for (const std::string& row : rows)
      counts[row.substr(1, row.find('"', 1) - 1)] = std::stoi(row.substr(row.rfind(',') + 1));
    testing::CommandResult ours =
        testing::RunToCompletion({bin_dir_ + "/sluice", "query", trace, "--format", "csv", "-q", sql}, dir_);
    EXPECT_EQ(ours.exit_code, 0) << ours.err;
    std::string upstream_rows;
    for (const std::string& row : rows) upstream_rows += row + "\n";
    std::string our_rows = ours.out.substr(std::min(ours.out.size(), ours.out.find('\n') + 1));
    std::erase(our_rows, '\r');
    std::erase(upstream_rows, '"');
    EXPECT_EQ(our_rows, upstream_rows) << "sluice query and upstream's trace processor differ";
    int once = 0;
    for (int i = 0; i < kMarkers; i++) {
      const int n = counts[tag_ + "-" + std::to_string(i)];
      EXPECT_LE(n, 1) << "marker " << i << " is in the trace " << n << " times";
      once += n == 1;
    }
    EXPECT_EQ(once, kMarkers) << "markers in the trace exactly once";
    EXPECT_EQ(UpstreamQuery(trace, "select name, idx, value from stats where severity in "
                                   "('error', 'data_loss') and value > 0;"),
              std::vector<std::string>{})
        << "upstream's trace processor reports errors or losses";
  }

  // A config for upstream's `perfetto`: print and sched_switch events, the
  // file written by the service every 100 ms (so that the test sees its
  // markers arrive), the process tree and the system's description.
  void WriteConfig(const std::string& path) {
    ASSERT_TRUE(testing::WriteTracefsFile(path, R"(
buffers { size_kb: 16384 fill_policy: RING_BUFFER }
data_sources { config { name: "linux.ftrace" ftrace_config {
  ftrace_events: "ftrace/print" ftrace_events: "sched/sched_switch" } } }
data_sources { config { name: "linux.process_stats"
  process_stats_config { scan_all_processes_on_start: true } } }
data_sources { config { name: "linux.system_info" } }
write_into_file: true
file_write_period_ms: 100
flush_period_ms: 1000
duration_ms: 3600000
)", O_CREAT | O_TRUNC));
  }

  static constexpr int kMarkers = 300;

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
  const std::string upstream_dir_ = testing::UpstreamPerfettoDir();
  const std::string tag_ = "interop-" + std::to_string(getpid());
  std::string dir_;
  testing::TracefsState before_;
  bool armed_ = false;
  ChildProcess sluiced_, probes_, recorder_;
};

TEST_F(PerfettoInteropKernelTest, UpstreamTracedProbesRecordsEveryMarkerOnceThroughSluiced) {
  ASSERT_TRUE(StartSluicedAndProbes(/*upstream_probes=*/true));
  const std::string trace = Path("trace.pftrace");
  ASSERT_TRUE(recorder_.Start({bin_dir_ + "/sluice", "record", "--daemon", "--consumer-socket",
                               Path("consumer.sock"), "-t", "1h", "-q", "--file-lag", "1s",
                               "ftrace/print", "-o", trace},
                              Path("record.out"), Path("record.err")));
  WriteMarkers(trace, &recorder_);
  if (HasFatalFailure()) return;
  recorder_.Signal(SIGINT);
  ASSERT_TRUE(recorder_.Wait(ScaledTimeoutMs(60000))) << recorder_.Describe();
  EXPECT_TRUE(recorder_.exited_normally_with(0)) << recorder_.Describe();
  ExpectEveryMarkerOnce(trace);
  EXPECT_NE(sluiced_.Stderr().find("'perfetto.traced_probes' connected"), std::string::npos)
      << sluiced_.Describe();
}

// Upstream's `perfetto -c config --txt -o file` records through sluiced as
// through traced, with either producer; Ctrl-C stops it as it stops a
// traced session (DisableTracing, then the end of the session answers its
// EnableTracing).
class PerfettoCommandKernelTest : public PerfettoInteropKernelTest,
                                  public ::testing::WithParamInterface<bool> {};

TEST_P(PerfettoCommandKernelTest, RecordsEveryMarkerOnceThroughSluiced) {
  ASSERT_TRUE(StartSluicedAndProbes(/*upstream_probes=*/GetParam()));
  WriteConfig(Path("config.pbtx"));
  const std::string trace = Path("trace.pftrace");
  std::vector<std::string> argv = Upstream("perfetto");
  argv.insert(argv.end(), {"-c", Path("config.pbtx"), "--txt", "-o", trace});
  ASSERT_TRUE(recorder_.Start(argv, Path("perfetto.out"), Path("perfetto.err")));
  WriteMarkers(trace, &recorder_);
  if (HasFatalFailure()) return;
  recorder_.Signal(SIGINT);
  ASSERT_TRUE(recorder_.Wait(ScaledTimeoutMs(60000))) << recorder_.Describe();
  EXPECT_TRUE(recorder_.exited_normally_with(0)) << recorder_.Describe();
  ExpectEveryMarkerOnce(trace);
  // The process tree came from the producer's process_stats source, the
  // CPUs' descriptions from its system_info source.
  EXPECT_NE(UpstreamQuery(trace, "select count(*) from process where pid = " + std::to_string(getpid()) + ";"),
            std::vector<std::string>{"0"});
  EXPECT_EQ(UpstreamQuery(trace, "select count(*) from cpu where processor is not null;"),
            std::vector<std::string>{std::to_string(sysconf(_SC_NPROCESSORS_CONF))});

  // `perfetto --query` describes sluiced, its producer and data sources.
  testing::CommandResult query = testing::RunToCompletion(
      [&] { auto q = Upstream("perfetto"); q.push_back("--query"); return q; }(), dir_);
  EXPECT_EQ(query.exit_code, 0) << query.err;
  EXPECT_NE(query.out.find("sluiced"), std::string::npos) << query.out;
  EXPECT_NE(query.out.find(GetParam() ? "perfetto.traced_probes" : "sluice-probes"), std::string::npos)
      << query.out;
  EXPECT_NE(query.out.find("linux.ftrace"), std::string::npos) << query.out;
}

INSTANTIATE_TEST_SUITE_P(Producers, PerfettoCommandKernelTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "UpstreamTracedProbes" : "SluiceProbes");
                         });

// `perfetto --detach=KEY` leaves the session recording in sluiced, and
// `perfetto --attach=KEY --stop` ends it: the file holds what was recorded
// meanwhile.
TEST_F(PerfettoInteropKernelTest, PerfettoDetachesAndAttaches) {
  ASSERT_TRUE(StartSluicedAndProbes(/*upstream_probes=*/false));
  WriteConfig(Path("config.pbtx"));
  const std::string trace = Path("trace.pftrace");
  std::vector<std::string> detach = Upstream("perfetto");
  detach.insert(detach.end(), {"--detach=interop", "-c", Path("config.pbtx"), "--txt", "-o", trace});
  testing::CommandResult detached = testing::RunToCompletion(detach, dir_);
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  // Nobody runs now but sluiced: the markers' waits watch sluiced.
  WriteMarkers(trace, &sluiced_);
  if (HasFatalFailure()) return;
  std::vector<std::string> attach = Upstream("perfetto");
  attach.insert(attach.end(), {"--attach=interop", "--stop"});
  testing::CommandResult attached = testing::RunToCompletion(attach, dir_);
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  ExpectEveryMarkerOnce(trace);
}

// `sluiced --perfetto-sockets` also listens where upstream's programs look
// for traced (here PERFETTO_*_SOCK_NAME, as traced itself takes them), so
// `perfetto` finds it with no socket named; at exit the sockets and the
// directory sluiced made for them are gone.
TEST_F(PerfettoInteropKernelTest, PerfettoSocketsAreWhereUpstreamLooks) {
  const std::string perfetto_dir = Path("run-perfetto");
  const std::vector<std::string> env = {"/usr/bin/env",
                                        "PERFETTO_PRODUCER_SOCK_NAME=" + perfetto_dir + "/traced-producer.sock",
                                        "PERFETTO_CONSUMER_SOCK_NAME=" + perfetto_dir + "/traced-consumer.sock"};
  std::vector<std::string> sluiced = env;
  sluiced.insert(sluiced.end(), {bin_dir_ + "/sluiced", "--perfetto-sockets", "--producer-socket",
                                 Path("producer.sock"), "--consumer-socket", Path("consumer.sock")});
  ASSERT_TRUE(sluiced_.Start(sluiced, Path("sluiced.out"), Path("sluiced.err")));
  std::vector<std::string> probes = env;
  probes.push_back(upstream_dir_ + "/traced_probes");
  ASSERT_TRUE(probes_.Start(probes, Path("probes.out"), Path("probes.err")));
  std::vector<std::string> query = env;
  query.insert(query.end(), {upstream_dir_ + "/perfetto", "--query"});
  // traced_probes retries until it connects; then --query lists it.
  std::string out;
  const uint64_t deadline = NowMs() + ScaledTimeoutMs(60000);
  while (NowMs() < deadline && out.find("perfetto.traced_probes") == std::string::npos) {
    out = testing::RunToCompletion(query, dir_).out;
    if (out.find("perfetto.traced_probes") == std::string::npos) usleep(100 * 1000);
  }
  EXPECT_NE(out.find("perfetto.traced_probes"), std::string::npos)
      << out << "\n" << sluiced_.Describe() << "\n" << probes_.Describe();
  EXPECT_NE(out.find("sluiced"), std::string::npos) << out;
  probes_.Terminate(ScaledTimeoutMs(30000));
  sluiced_.Signal(SIGTERM);
  ASSERT_TRUE(sluiced_.Wait(ScaledTimeoutMs(60000)));
  EXPECT_TRUE(sluiced_.exited_normally_with(0)) << sluiced_.Describe();
  EXPECT_NE(access(perfetto_dir.c_str(), F_OK), 0) << "sluiced left " << perfetto_dir << " behind";
  EXPECT_NE(access(Path("consumer.sock").c_str(), F_OK), 0);
}

// `perfetto --background-wait` leaves a session recording in memory (it
// prints its pid, once every data source started), `perfetto --clone-by-name` copies it while it runs, and SIGTERM
// to the background perfetto ends it with its file written.
TEST_F(PerfettoInteropKernelTest, BackgroundSessionIsClonedByNameAndStopped) {
  ASSERT_TRUE(StartSluicedAndProbes(/*upstream_probes=*/false));
  ASSERT_TRUE(testing::WriteTracefsFile(Path("config.pbtx"), R"(
buffers { size_kb: 16384 fill_policy: RING_BUFFER }
data_sources { config { name: "linux.ftrace" ftrace_config { ftrace_events: "ftrace/print" } } }
unique_session_name: "interop_bg"
duration_ms: 3600000
)", O_CREAT | O_TRUNC));
  // --background-wait: it returns once sluiced says every data source
  // started (ObserveEvents), as with traced, not after its 30 s timeout.
  std::vector<std::string> background = Upstream("perfetto");
  background.insert(background.end(),
                    {"--background-wait", "-c", Path("config.pbtx"), "--txt", "-o", Path("bg.pftrace")});
  testing::CommandResult started = testing::RunToCompletion(background, dir_);
  ASSERT_EQ(started.exit_code, 0) << started.err;
  EXPECT_EQ(started.err.find("Timeout waiting for all data sources"), std::string::npos) << started.err;
  const pid_t bg = static_cast<pid_t>(std::stol(started.out));
  ASSERT_GT(bg, 0) << started.out;
  std::vector<std::string> clone = Upstream("perfetto");
  clone.insert(clone.end(), {"--clone-by-name", "interop_bg", "-o", Path("clone.pftrace")});
  // A marker, cloned until the clone holds it (the session reads tracefs by
  // then), as WriteMarkers waits on a streamed file.
  auto clone_until_it_holds = [&](const std::string& marker) {
    const int fd = open((std::string(Tracefs::kDefaultRoot) + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
    const uint64_t deadline = NowMs() + ScaledTimeoutMs(120000);
    bool held = false;
    while (!held && NowMs() < deadline) {
      testing::WriteTraceMarker(fd, marker);
      testing::CommandResult r = testing::RunToCompletion(clone, dir_);
      held = r.exit_code == 0 && testing::ReadFileOr(Path("clone.pftrace"), "").find(marker) != std::string::npos;
      if (!held) usleep(100 * 1000);
    }
    close(fd);
    return held;
  };
  ASSERT_TRUE(clone_until_it_holds(Marker("start"))) << sluiced_.Describe();
  WriteNumberedMarkers();
  if (HasFatalFailure()) return;
  ASSERT_TRUE(clone_until_it_holds(Marker("end")));
  ExpectEveryMarkerOnce(Path("clone.pftrace"));
  // The background perfetto is not our child: wait for it to be gone.
  ASSERT_EQ(kill(bg, SIGTERM), 0);
  const uint64_t deadline = NowMs() + ScaledTimeoutMs(60000);
  auto gone = [bg] {
    const std::string stat = testing::ReadFileOr("/proc/" + std::to_string(bg) + "/stat", "");
    const size_t paren = stat.rfind(')');
    return stat.empty() || (paren != std::string::npos && stat.size() > paren + 2 && stat[paren + 2] == 'Z');
  };
  while (!gone() && NowMs() < deadline) usleep(50 * 1000);
  ASSERT_TRUE(gone()) << "the background perfetto did not stop on SIGTERM";
  ExpectEveryMarkerOnce(Path("bg.pftrace"));
}

}  // namespace
}  // namespace sluice
