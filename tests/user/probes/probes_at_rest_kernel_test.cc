// A flight recorder left running for a week, in compressed time: what runs
// at rest (the drain thread's housekeeping look, the session's periodic
// flush through every reader) runs thousands of times, and the recorder
// neither grows (heap in use, file descriptors, threads) nor ends with a
// worse trace than after a minute. The real pipeline of an in-process
// `sluice record`: TracingService, ProbesProducer, SMB, kernel buffers.
//
// A week at rest is about 10,000 periodic flushes (at sluice record's 60 s
// ceiling) and 20,000 housekeeping looks (every 30 s). Here housekeeping
// runs every millisecond (well over a week's looks) and the flush every
// 10 ms, the service's shortest period: 3,000 flushes, two days' worth, in
// half a minute. A leak is found by its rate, not by the week: 50 bytes a
// flush would be 150 KB here. A trickle of markers makes the small ring
// wrap before the first measure, so that what the buffer keeps per chunk
// it holds (an index entry for each flush's chunk) is at its steady size:
// with a ring that never wrapped, that bounded growth read as a leak.
#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "perfetto/common/trace_stats.pb.h"
#include "perfetto/config/trace_config.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "tests/kernel_test_util.h"
#include "tests/service/service_test_util.h"
#include "tests/user/probes/in_process_session_test_util.h"
#include "tests/user/probes/tracefs_test_util.h"
#include "user/probes/probes_producer.h"

namespace sluice {
namespace {

constexpr char kTracefs[] = "/sys/kernel/tracing";

struct Footprint {
  size_t fds = 0;
  size_t threads = 0;
  size_t heap_in_use = 0;  // mallinfo2().uordblks: bytes the program holds.
};

size_t CountEntries(const char* dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) n++;
  return n;
}

Footprint Measure() {
  Footprint f;
  f.fds = CountEntries("/proc/self/fd");
  f.threads = CountEntries("/proc/self/task");
  f.heap_in_use = mallinfo2().uordblks;
  return f;
}

uint64_t FlushesSucceeded(ConsumerEndpoint* consumer) {
  auto stats = consumer->GetTraceStats();
  return stats.ok() ? stats->flushes_succeeded() : 0;
}

class ProbesAtRestKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) SLUICE_KERNEL_SKIP("needs root to control tracefs");
    if (access((std::string(kTracefs) + "/tracing_on").c_str(), F_OK) != 0)
      SLUICE_KERNEL_SKIP("no tracefs at /sys/kernel/tracing");
    before_ = testing::ReadTracefsState();
  }
  void TearDown() override {
    if (IsSkipped()) return;
    testing::TracefsState after = testing::ReadTracefsState();
    EXPECT_EQ(after, before_) << "before: " << before_.ToString() << "\nafter:  " << after.ToString();
  }
  testing::TracefsState before_;
};

TEST_F(ProbesAtRestKernelTest, ThousandsOfPeriodsGrowNothingAndEndWithAValidTrace) {
  ProbesProducerOptions probe_options;
  probe_options.ftrace.control.print_warnings = false;
  probe_options.ftrace.housekeeping_period = std::chrono::milliseconds(1);
  testing::InProcessSession session(/*smb_kb=*/2048, probe_options);
  perfetto::protos::TraceConfig config;
  auto* buffer = config.add_buffers();
  // A flight recorder whose ring wraps many times in the run: the buffer's
  // chunk index is then at its steady size before the first measure (it
  // holds one entry per chunk in the ring, and each flush commits one).
  buffer->set_size_kb(256);
  buffer->set_fill_policy(perfetto::protos::TraceConfig::BufferConfig::RING_BUFFER);
  config.set_flush_period_ms(10);
  auto* ds = config.add_data_sources()->mutable_config();
  ds->set_name("linux.ftrace");
  auto* ftrace = ds->mutable_ftrace_config();
  for (const char* e : {"sched/sched_switch", "sched/sched_waking", "power/cpu_idle", "ftrace/print"})
    ftrace->add_ftrace_events(e);
  ftrace->set_buffer_size_kb(512);
  ftrace->set_instance_name("sluice_test_at_rest_" + std::to_string(getpid()));
  ASSERT_TRUE(session.Start(config).ok());
  // A trickle, so that the ring wraps within the warm-up: a marker every
  // millisecond, about 50 KiB a second.
  std::atomic<bool> stop_trickle{false};
  std::thread trickle([&] {
    const std::string path =
        std::string(kTracefs) + "/instances/" + ftrace->instance_name() + "/trace_marker";
    int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    for (uint64_t i = 0; !stop_trickle.load(std::memory_order_relaxed); i++) {
      const std::string line = "sluice-at-rest-" + std::to_string(i);
      (void)!write(fd, line.data(), line.size());
      usleep(1000);
    }
    close(fd);
  });
  // Joined before the session ends, on every path: its open trace_marker
  // would keep the instance from being removed.
  struct JoinTrickle {
    std::atomic<bool>* stop;
    std::thread* t;
    void Join() {
      stop->store(true);
      if (t->joinable()) t->join();
    }
    ~JoinTrickle() { Join(); }
  } join_trickle{&stop_trickle, &trickle};

  // Warm-up: the first periods size the pools, the SMB's chunks and the
  // writers' buffers, once.
  auto flushes_reach = [&](uint64_t n) {
    return testing::WaitUntil([&] { return FlushesSucceeded(session.consumer()) >= n; },
                              static_cast<int>(testing::ScaledTimeoutMs(600000)));
  };
  auto ring_wrapped = [&] {
    auto stats = session.consumer()->GetTraceStats();
    return stats.ok() && stats->buffer_stats_size() > 0 && stats->buffer_stats(0).chunks_overwritten() > 0;
  };
  ASSERT_TRUE(testing::WaitUntil(ring_wrapped, static_cast<int>(testing::ScaledTimeoutMs(600000))));
  ASSERT_TRUE(flushes_reach(FlushesSucceeded(session.consumer()) + 200));
  const Footprint warm = Measure();
  const uint64_t warm_flushes = FlushesSucceeded(session.consumer());
  constexpr uint64_t kFlushes = 3000;
  ASSERT_TRUE(flushes_reach(warm_flushes + kFlushes)) << FlushesSucceeded(session.consumer()) << " flushes";
  const Footprint week = Measure();
  fprintf(stderr, "[ measured ] after %llu periodic flushes: fds %zu -> %zu, threads %zu -> %zu, heap in use %zu -> %zu bytes\n",
          static_cast<unsigned long long>(kFlushes), warm.fds, week.fds, warm.threads, week.threads,
          warm.heap_in_use, week.heap_in_use);
  EXPECT_EQ(week.fds, warm.fds);
  EXPECT_EQ(week.threads, warm.threads);
  // What moves is the allocator's and protobuf's own churn.
  EXPECT_LT(week.heap_in_use, warm.heap_in_use + 128 * 1024);

  join_trickle.Join();
  auto packets = session.StopAndRead();
  ASSERT_TRUE(packets.ok()) << packets.status().message();
  // As valid as after a minute: events, the end's stats, nothing lost
  // outside the ring's own overwriting, which is counted.
  uint64_t events = 0;
  bool have_trace_stats = false, have_end_stats = false;
  for (const auto& p : *packets) {
    if (p.has_ftrace_events()) events += p.ftrace_events().event_size();
    if (p.has_ftrace_stats() && p.ftrace_stats().phase() == perfetto::protos::FtraceStats::END_OF_TRACE) {
      have_end_stats = true;
      EXPECT_EQ(p.ftrace_stats().ftrace_parse_errors_size(), 0);
    }
    if (!p.has_trace_stats()) continue;
    have_trace_stats = true;
    const auto& st = p.trace_stats();
    EXPECT_GE(st.flushes_succeeded(), warm_flushes + kFlushes);
    EXPECT_EQ(st.flushes_failed(), 0u);
    for (const auto& b : st.buffer_stats()) {
      EXPECT_EQ(b.trace_writer_packet_loss(), 0u);
      EXPECT_EQ(b.abi_violations(), 0u);
      EXPECT_EQ(b.patches_failed(), 0u);
    }
  }
  EXPECT_GT(events, 0u);
  EXPECT_TRUE(have_trace_stats);
  EXPECT_TRUE(have_end_stats);
}

}  // namespace
}  // namespace sluice
