// An app instrumented as with the Perfetto SDK (sdk_style_producer_test_util.h:
// Perfetto's IPC, its own SMB, track events) records through the sluiced
// binary: its nested slices, counter, flow and interned names reach the
// trace intact, as upstream's trace processor reads them, and `sluice query`
// gives the same rows.
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "service/ipc/consumer_ipc_client.h"
#include "tests/child_process_test_util.h"
#include "tests/kernel_test_util.h"
#include "tests/service/ipc/sdk_style_producer_test_util.h"
#include "tests/service/service_test_util.h"
#include "tests/user/cmd/record_test_util.h"

namespace sluice {
namespace {

using testing::ChildProcess;

uint64_t BootTimeNs() {
  timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The rows of `sql` on `trace` as CSV, from upstream's trace_processor_shell
// or from `sluice query`.
std::string QueryCsv(const std::vector<std::string>& tool, const std::string& trace, const std::string& sql,
                     const std::string& dir) {
  std::vector<std::string> argv = tool;
  argv.insert(argv.end(), {trace});
  testing::CommandResult r = testing::RunToCompletion(argv, dir, [&] {
    const std::string path = dir + "/query.sql";
    FILE* f = fopen(path.c_str(), "w");
    fputs(sql.c_str(), f);
    fclose(f);
    return path;
  }());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

std::string Unquoted(std::string csv) {
  std::erase(csv, '"');
  std::erase(csv, '\r');
  return csv;
}

TEST(SdkStyleProducerTest, TrackEventsReachTheTraceIntact) {
  const std::string bin_dir = testing::SluiceBinDir();
  const std::string upstream = testing::UpstreamPerfettoDir() + "/trace_processor_shell";
  if (access(upstream.c_str(), X_OK) != 0) {
    if (testing::RunningUnderCi()) FAIL() << "no upstream trace_processor_shell at " << upstream;
    GTEST_SKIP() << "no upstream trace_processor_shell at " << upstream << " (../shared/tools/perfetto)";
  }
  const std::string dir = testing::MakeTempDir("sluice-sdk-style-");
  ASSERT_FALSE(dir.empty());
  ChildProcess sluiced;
  ASSERT_TRUE(sluiced.Start({bin_dir + "/sluiced", "--producer-socket", dir + "/producer.sock",
                             "--consumer-socket", dir + "/consumer.sock"},
                            dir + "/sluiced.out", dir + "/sluiced.err"));
  std::unique_ptr<ConsumerIpcClient> consumer;
  ASSERT_TRUE(testing::WaitUntil([&] {
    auto c = ConsumerIpcClient::Connect(dir + "/consumer.sock");
    if (c.ok()) consumer = std::move(c.value());
    return consumer != nullptr;
  })) << sluiced.Describe();
  testing::SdkStyleProducer app;
  ASSERT_TRUE(app.Connect(dir + "/producer.sock").ok()) << sluiced.Describe();
  ASSERT_TRUE(testing::WaitUntil([&] {
    auto state = consumer->QueryServiceState();
    if (state.ok())
      for (const auto& ds : state->data_sources)
        if (ds.name == testing::SdkStyleProducer::kDataSource) return true;
    return false;
  }));

  const std::string trace = dir + "/trace.pftrace";
  FILE* out = fopen(trace.c_str(), "w");
  ASSERT_NE(out, nullptr);
  perfetto::protos::TraceConfig config = testing::MakeConfig(1024, testing::SdkStyleProducer::kDataSource);
  config.set_write_into_file(true);
  config.set_flush_period_ms(1000);  // Else upstream flags write_into_file without it.
  ASSERT_TRUE(consumer->EnableTracing(config, fileno(out)).ok());
  fclose(out);
  ASSERT_TRUE(app.WaitForStart(60000));
  app.WriteTrackEvents(BootTimeNs());
  auto flushed = consumer->Flush();
  ASSERT_TRUE(flushed.ok());
  EXPECT_TRUE(flushed.value()) << "the app answered the flush";
  EXPECT_GE(app.flushes_answered(), 1);
  ASSERT_TRUE(consumer->DisableTracing().ok());
  ASSERT_TRUE(consumer->WaitForTracingDisabled(60000));

  const std::vector<std::pair<std::string, std::string>> checks = {
      {"select s.name, s.depth, s.dur, t.name as thread, p.name as process from slice s "
       "join thread_track tt on s.track_id = tt.id join thread t using (utid) "
       "left join process p using (upid) order by s.ts;",
       "\"name\",\"depth\",\"dur\",\"thread\",\"process\"\n"
       "\"Outer\",0,4000,\"sdk-worker\",\"sdk-style-app\"\n"
       "\"Inner\",1,2000,\"sdk-worker\",\"sdk-style-app\"\n"
       "\"Next\",0,1000,\"sdk-worker\",\"sdk-style-app\"\n"},
      {"select s.category from slice s where s.name = 'Inner';", "\"category\"\n\"app\"\n"},
      {"select t.name, cast(c.value as int) as value from counter c join counter_track t "
       "on c.track_id = t.id where t.name = 'queue_depth' order by c.ts;",
       "\"name\",\"value\"\n\"queue_depth\",7\n\"queue_depth\",3\n"},
      {"select o.name as from_slice, i.name as to_slice from flow f join slice o on f.slice_out = o.id "
       "join slice i on f.slice_in = i.id;",
       "\"from_slice\",\"to_slice\"\n\"Outer\",\"Next\"\n"},
      {"select name, value from stats where severity in ('error', 'data_loss') and value > 0;",
       "\"name\",\"value\"\n"},
  };
  for (const auto& [sql, expected] : checks) {
    SCOPED_TRACE(sql);
    std::string got = QueryCsv({upstream, "-q", "/dev/stdin"}, trace, sql, dir);
    EXPECT_EQ(got, expected) << "upstream's trace processor";
    // sluice's CSV is RFC 4180's (CRLF, quotes only where needed): the
    // same rows once both are stripped of quotes and CRs.
    std::string ours = QueryCsv({bin_dir + "/sluice", "query", "--format", "csv", "-f", "-"}, trace, sql, dir);
    EXPECT_EQ(Unquoted(ours), Unquoted(expected)) << "sluice query";
  }
  EXPECT_NE(sluiced.Stderr().find("'sdk-style-app' connected"), std::string::npos) << sluiced.Describe();
  EXPECT_NE(sluiced.Stderr().find("of its own"), std::string::npos) << "the app's own SMB: " << sluiced.Describe();
  sluiced.Terminate(testing::ScaledTimeoutMs(30000));
  if (!::testing::Test::HasFailure()) testing::RemoveTempDir(dir);
}

}  // namespace
}  // namespace sluice
