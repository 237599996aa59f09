#include "user/probes/ftrace/ftrace_cpu_stats.h"

#include <gtest/gtest.h>

#include "perfetto/trace/ftrace/ftrace_stats.pb.h"
#include "shm/proto_writer.h"
#include "tests/user/probes/fake_tracefs.h"
#include "user/probes/tracefs.h"

namespace sluice {
namespace {

// As printed by 6.18 (tracing_stats_read).
constexpr char kStats[] =
    "entries: 12\n"
    "overrun: 3456\n"
    "commit overrun: 7\n"
    "bytes: 992\n"
    "oldest event ts:  84844.825372\n"
    "now ts:  84847.102075\n"
    "dropped events: 9\n"
    "read events: 10\n";

TEST(FtraceCpuStatsTest, ParsesEveryLine) {
  FtraceCpuStats s;
  ASSERT_TRUE(ParseFtraceCpuStats(kStats, &s));
  EXPECT_EQ(s.entries, 12u);
  EXPECT_EQ(s.overrun, 3456u);
  EXPECT_EQ(s.commit_overrun, 7u);
  EXPECT_EQ(s.bytes, 992u);
  EXPECT_EQ(s.oldest_event_ts_ns, 84844825372000ull);
  EXPECT_EQ(s.now_ts_ns, 84847102075000ull);
  EXPECT_DOUBLE_EQ(s.oldest_event_ts, 84844.825372);
  EXPECT_DOUBLE_EQ(s.now_ts, 84847.102075);
  EXPECT_EQ(s.dropped_events, 9u);
  EXPECT_EQ(s.read_events, 10u);
}

TEST(FtraceCpuStatsTest, OldKernelsMissLinesAndCounterClocksPrintIntegers) {
  // 3.x: no dropped/read events lines; counter clock: bare integers.
  FtraceCpuStats s;
  ASSERT_TRUE(ParseFtraceCpuStats("entries: 1\noverrun: 2\ncommit overrun: 0\nbytes: 40\n"
                                  "oldest event ts: 123456\nnow ts: 123999\n",
                                  &s));
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.oldest_event_ts_ns, 123456u);
  EXPECT_EQ(s.now_ts_ns, 123999u);
  EXPECT_EQ(s.dropped_events, 0u);
}

TEST(FtraceCpuStatsTest, TimestampForms) {
  uint64_t ns;
  double sec;
  ASSERT_TRUE(ParseFtraceStatsTimestamp("  5.000001", &ns, &sec));
  EXPECT_EQ(ns, 5000001000ull);
  ASSERT_TRUE(ParseFtraceStatsTimestamp("0.5", &ns, &sec));
  EXPECT_EQ(ns, 500000000ull);
  ASSERT_TRUE(ParseFtraceStatsTimestamp("1.123456789", &ns, &sec));
  EXPECT_EQ(ns, 1123456789ull);
  EXPECT_FALSE(ParseFtraceStatsTimestamp("1.1234567891", &ns, &sec));
  EXPECT_FALSE(ParseFtraceStatsTimestamp("x.5", &ns, &sec));
  EXPECT_FALSE(ParseFtraceStatsTimestamp("5.", &ns, &sec));
  EXPECT_FALSE(ParseFtraceStatsTimestamp("", &ns, &sec));
  EXPECT_FALSE(ParseFtraceStatsTimestamp("99999999999999999999.1", &ns, &sec));
}

TEST(FtraceCpuStatsTest, MalformedValueIsReportedNotFatal) {
  FtraceCpuStats s;
  EXPECT_FALSE(ParseFtraceCpuStats("entries: lots\noverrun: 4\n", &s));
  EXPECT_EQ(s.overrun, 4u);
  FtraceCpuStats t;
  EXPECT_TRUE(ParseFtraceCpuStats("garbage\n\nfuture counter: 5\n", &t));
}

TEST(FtraceCpuStatsTest, WritesPerfettoFtraceCpuStats) {
  FtraceCpuStats s;
  ASSERT_TRUE(ParseFtraceCpuStats(kStats, &s));
  s.cpu = 3;
  HeapProtoWriter heap;
  WriteFtraceCpuStatsFields(s, heap.writer());
  perfetto::protos::FtraceCpuStats proto;
  ASSERT_TRUE(proto.ParseFromString(heap.Contents()));
  EXPECT_EQ(proto.cpu(), 3u);
  EXPECT_EQ(proto.entries(), 12u);
  EXPECT_EQ(proto.overrun(), 3456u);
  EXPECT_EQ(proto.commit_overrun(), 7u);
  EXPECT_EQ(proto.bytes_read(), 992u);
  EXPECT_DOUBLE_EQ(proto.oldest_event_ts(), 84844.825372);
  EXPECT_DOUBLE_EQ(proto.now_ts(), 84847.102075);
  EXPECT_EQ(proto.dropped_events(), 9u);
  EXPECT_EQ(proto.read_events(), 10u);
}

TEST(FtraceCpuStatsTest, ReadsFromTracefs) {
  testing::FakeTracefs fake;
  fake.PopulateRoot();
  fake.Write("per_cpu/cpu1/stats", kStats);
  TracefsOptions options;
  options.root = fake.root();
  auto fs = Tracefs::Open(options);
  ASSERT_TRUE(fs.ok());
  auto s = ReadFtraceCpuStats(**fs, 1);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->cpu, 1u);
  EXPECT_EQ(s->overrun, 3456u);
  EXPECT_FALSE(ReadFtraceCpuStats(**fs, 7).ok());
}

}  // namespace
}  // namespace sluice
