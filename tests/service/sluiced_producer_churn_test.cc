// Producers connecting and disconnecting in a loop against a real sluiced
// (the binary next to this test, on sockets in a temp dir): afterwards the
// daemon holds no more file descriptors or memfds than before, and its
// memory is back where it was, while a consumer kept reading and restarting
// sessions the producers joined.
//
// The length is a parameter, so `make test` runs a short loop and a soak is
// one variable away:
//   SLUICE_CHURN_SECONDS=60 SLUICE_CHURN_PRODUCERS=200 build/sluice_tests
//     --gtest_filter='SluicedProducerChurnTest.*'
// (defaults: 5 s, 200 producers; 50 under ASan/TSan). The figures (fds, memfds, Rss / Pss /
// Pss_Anon from /proc/<pid>/smaps_rollup before, at the peak and after, and
// the connection count) are printed, and docs/SERVICE.md quotes a 60 s run.
//
// Each producer thread loops: connect (ProducerIpcClient, a 64 KiB SMB),
// register the data source, and then one of: leave at once; wait for the
// session's StartDataSource, write one chunk's worth of packets, flush and
// leave; or write without flushing and leave (the service scrapes the SMB).
// The consumer meanwhile reads the buffers every 200 ms and stops, reads and
// restarts its session every 2 s, so producers arrive in running sessions,
// are started by new ones, and go while their data is being read.
#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "perfetto/common/trace_stats.pb.h"
#include "service/ipc/consumer_ipc_client.h"
#include "service/ipc/producer_ipc_client.h"
#include "shm/shared_memory_arbiter.h"
#include "tests/child_process_test_util.h"
#include "tests/service/service_test_util.h"

namespace sluice {
namespace {

using testing::ChildProcess;
using perfetto::protos::TracePacket;
using testing::NowMs;

constexpr int kWaitMs = 60000;

// Under ASan or TSan the daemon is built the same way: its allocator keeps
// freed memory in quarantine and shadow memory, so memory figures say
// nothing about leaks there (ASan reports leaks itself), and everything is
// 10-20 times slower, so fewer producers by default.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = getenv(name);
  return v && *v ? strtoull(v, nullptr, 10) : fallback;
}

// What the daemon holds, from /proc.
struct ProcessSample {
  size_t fds = 0;
  size_t memfds = 0;  // fds whose link starts with "/memfd:"
  std::map<std::string, std::string> fd_links;  // fd number -> link, for failure messages
  uint64_t rss_kb = 0, pss_kb = 0, pss_anon_kb = 0, pss_shmem_kb = 0;

  std::string Describe() const {
    std::ostringstream s;
    s << "fds " << fds << ", memfds " << memfds << ", Rss " << rss_kb << " KiB, Pss " << pss_kb
      << " KiB (anon " << pss_anon_kb << ", shmem " << pss_shmem_kb << ")";
    return s.str();
  }
};

ProcessSample Sample(pid_t pid) {
  ProcessSample s;
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  if (DIR* d = opendir(fd_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      s.fds++;
      char link[256];
      ssize_t n = readlink((fd_dir + "/" + e->d_name).c_str(), link, sizeof(link) - 1);
      std::string target = n > 0 ? std::string(link, static_cast<size_t>(n)) : "?";
      if (target.starts_with("/memfd:")) s.memfds++;
      s.fd_links[e->d_name] = target;
    }
    closedir(d);
  }
  // "Rss:   1234 kB" lines after the [rollup] header line.
  std::ifstream rollup("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string line;
  while (std::getline(rollup, line)) {
    char key[64];
    unsigned long long kb = 0;
    if (sscanf(line.c_str(), "%63s %llu kB", key, &kb) != 2) continue;
    const std::string k = key;
    if (k == "Rss:") s.rss_kb = kb;
    if (k == "Pss:") s.pss_kb = kb;
    if (k == "Pss_Anon:") s.pss_anon_kb = kb;
    if (k == "Pss_Shmem:") s.pss_shmem_kb = kb;
  }
  return s;
}

// The mappings holding more than 256 KiB of anonymous memory ("[heap]",
// an anonymous ring...), for failure messages.
std::string LargeAnonMappings(pid_t pid) {
  std::ifstream smaps("/proc/" + std::to_string(pid) + "/smaps");
  std::string line, mapping, out;
  while (std::getline(smaps, line)) {
    unsigned long long kb = 0;
    if (sscanf(line.c_str(), "Anonymous: %llu kB", &kb) == 1) {
      if (kb > 256) out += mapping + " -> " + std::to_string(kb) + " KiB anonymous\n";
    } else if (!line.empty() && isxdigit(static_cast<unsigned char>(line[0])) &&
               line.find(':') > line.find(' ')) {
      mapping = line;  // A mapping's first line: "start-end perms offset dev inode path".
    }
  }
  return out;
}

// The fds that differ between two samples, "fd: before -> after".
std::string FdDiff(const ProcessSample& a, const ProcessSample& b) {
  std::string out;
  std::set<std::string> fds;
  for (const auto& [fd, link] : a.fd_links) fds.insert(fd);
  for (const auto& [fd, link] : b.fd_links) fds.insert(fd);
  for (const std::string& fd : fds) {
    auto ia = a.fd_links.find(fd), ib = b.fd_links.find(fd);
    std::string la = ia == a.fd_links.end() ? "-" : ia->second;
    std::string lb = ib == b.fd_links.end() ? "-" : ib->second;
    if (la != lb) out += fd + ": " + la + " -> " + lb + "; ";
  }
  return out;
}

// A cooperative producer endpoint; the thread that owns it does the rest.
class ChurnEndpoint : public Producer {
 public:
  void SetupDataSource(DataSourceInstanceId, const perfetto::protos::DataSourceConfig&) override {}
  void StartDataSource(DataSourceInstanceId,
                       const perfetto::protos::DataSourceConfig& config) override {
    std::lock_guard<std::mutex> lock(mu_);
    target_buffer_ = config.target_buffer();
    cv_.notify_all();
  }
  void StopDataSource(DataSourceInstanceId id) override {
    if (connection) connection->NotifyDataSourceStopped(id);
  }
  void Flush(FlushRequestId id, const std::vector<DataSourceInstanceId>&) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (arbiter) arbiter->FlushPendingCommitData(id);
  }
  void ClearIncrementalState(const std::vector<DataSourceInstanceId>&) override {}
  void OnDisconnect(const std::string&) override {
    std::lock_guard<std::mutex> lock(mu_);
    disconnected_ = true;
    cv_.notify_all();
  }
  // The target buffer of the first start; 0 if none came within timeout_ms.
  uint32_t WaitForStart(uint64_t timeout_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                 [this] { return target_buffer_ != 0 || disconnected_; });
    return target_buffer_;
  }
  void SetArbiter(SharedMemoryArbiter* a) {
    std::lock_guard<std::mutex> lock(mu_);
    arbiter = a;
  }

  ProducerEndpoint* connection = nullptr;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  SharedMemoryArbiter* arbiter = nullptr;
  uint32_t target_buffer_ = 0;
  bool disconnected_ = false;
};

struct ChurnCounts {
  std::atomic<uint64_t> connections{0};
  std::atomic<uint64_t> connect_errors{0};
  std::atomic<uint64_t> with_data{0};
  std::atomic<uint64_t> packets{0};
  std::mutex mu;
  std::string first_error;
};

// One producer's life: connect, register, maybe write, leave.
void ProducerCycle(const std::string& socket, uint32_t thread, uint64_t iteration,
                   ChurnCounts* counts) {
  ChurnEndpoint endpoint;
  auto client = ProducerIpcClient::Connect(
      socket, &endpoint, ProducerOptions{"churn-" + std::to_string(thread), 64 * 1024, 4096});
  if (!client.ok()) {
    counts->connect_errors++;
    std::lock_guard<std::mutex> lock(counts->mu);
    if (counts->first_error.empty()) counts->first_error = client.status().message();
    return;
  }
  counts->connections++;
  ProducerIpcClient* c = client.value().get();
  endpoint.connection = c;
  auto arbiter = std::make_unique<SharedMemoryArbiter>(c->shm_start(), c->shm_size(),
                                                       c->shm_page_size(), c->commit_data_sink());
  endpoint.SetArbiter(arbiter.get());
  DataSourceDescriptor d;
  d.name = "churn.ds";
  d.will_notify_on_stop = true;
  c->RegisterDataSource(d);
  const uint32_t mode = static_cast<uint32_t>((thread + iteration) % 3);
  if (mode != 0) {
    // Sessions restart every 2 s; a producer that sees none leaves.
    uint32_t target = endpoint.WaitForStart(5000);
    if (target != 0) {
      auto writer = arbiter->CreateTraceWriter(target, BufferExhaustedPolicy::kDrop);
      for (uint32_t i = 0; i < testing::kTestPacketsPerChunk; i++)
        testing::WriteTestPacket(writer.get(), {thread, 0, static_cast<uint32_t>(iteration)});
      if (mode == 1) writer->Flush();
      counts->with_data++;
      counts->packets += testing::kTestPacketsPerChunk;
    }
  }
  endpoint.SetArbiter(nullptr);
  arbiter.reset();
  client.value().reset();
}

class SluicedProducerChurnTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/sluice-churn-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    daemon_.Terminate(30000);
    if (HasFailure()) {
      // The end of sluiced's log says what it saw.
      std::string log = daemon_.Stderr();
      if (log.size() > 4000) log = "..." + log.substr(log.size() - 4000);
      printf("--- sluiced's log ---\n%s\n", log.c_str());
    }
    std::string cmd = "rm -rf " + dir_;
    ASSERT_EQ(system(cmd.c_str()), 0);
  }

  std::string dir_;
  ChildProcess daemon_;
};

perfetto::protos::TraceConfig ChurnConfig() {
  auto config = testing::MakeConfig(8 * 1024, "churn.ds");
  config.set_flush_timeout_ms(5000);
  config.set_data_source_stop_timeout_ms(5000);
  return config;
}

TEST_F(SluicedProducerChurnTest, ProducersConnectingAndDisconnectingLeaveNoFdsMemfdsOrMemory) {
  const uint64_t seconds = EnvOr("SLUICE_CHURN_SECONDS", 5);
  const uint32_t producers =
      static_cast<uint32_t>(EnvOr("SLUICE_CHURN_PRODUCERS", kSanitized ? 50 : 200));
  const std::string sluiced = testing::SluiceBinDir() + "/sluiced";
  ASSERT_EQ(access(sluiced.c_str(), X_OK), 0) << sluiced << " is not built (make)";
  const std::string psock = dir_ + "/producer.sock", csock = dir_ + "/consumer.sock";
  ASSERT_TRUE(daemon_.Start({sluiced, "--foreground", "--producer-socket", psock,
                             "--consumer-socket", csock},
                            dir_ + "/sluiced.out", dir_ + "/sluiced.err"));
  auto connect_consumer = [&]() -> std::unique_ptr<ConsumerIpcClient> {
    const uint64_t deadline = NowMs() + static_cast<uint64_t>(kWaitMs);
    while (NowMs() < deadline && daemon_.running()) {
      auto c = ConsumerIpcClient::Connect(csock);
      if (c.ok()) return std::move(c.value());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return nullptr;
  };
  // `steady` keeps one session for a whole round and reads it only at the
  // end (the ring wraps: gone producers' data is overwritten, not read);
  // `restarting` reads its session every 200 ms and replaces it every 2 s.
  std::unique_ptr<ConsumerIpcClient> steady = connect_consumer();
  ASSERT_TRUE(steady) << "sluiced did not come up: " << daemon_.Describe();
  std::unique_ptr<ConsumerIpcClient> restarting = connect_consumer();
  ASSERT_TRUE(restarting);
  const pid_t pid = daemon_.pid();
  auto end_session = [](ConsumerIpcClient* consumer, std::vector<TracePacket>* packets) {
    EXPECT_TRUE(consumer->DisableTracing().ok());
    EXPECT_TRUE(consumer->WaitForTracingDisabled(kWaitMs));
    EXPECT_TRUE(consumer
                    ->ReadBuffers([&](std::string_view bytes) {
                      if (!packets) return;
                      packets->emplace_back();
                      packets->back().ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
                    })
                    .ok());
    EXPECT_TRUE(consumer->FreeBuffers().ok());
  };

  // One round: `producers` threads churn for `ms` while the consumers read
  // and restart sessions. Returns the peak sample; the steady session's
  // trace goes to *steady_trace.
  auto run_round = [&](uint64_t ms, ChurnCounts* counts, std::vector<TracePacket>* steady_trace) {
    ProcessSample peak;
    EXPECT_TRUE(steady->EnableTracing(ChurnConfig()).ok());
    EXPECT_TRUE(restarting->EnableTracing(ChurnConfig()).ok());
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (uint32_t t = 0; t < producers; t++) {
      threads.emplace_back([&, t] {
        for (uint64_t i = 0; !stop.load(std::memory_order_relaxed); i++)
          ProducerCycle(psock, t, i, counts);
      });
    }
    const uint64_t end = NowMs() + ms;
    uint64_t next_restart = NowMs() + 2000;
    while (NowMs() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      EXPECT_TRUE(restarting->ReadBuffers([](std::string_view) {}).ok());
      if (NowMs() >= next_restart) {
        end_session(restarting.get(), nullptr);
        EXPECT_TRUE(restarting->EnableTracing(ChurnConfig()).ok());
        next_restart = NowMs() + 2000;
      }
      ProcessSample now = Sample(pid);
      peak.fds = std::max(peak.fds, now.fds);
      peak.memfds = std::max(peak.memfds, now.memfds);
      peak.rss_kb = std::max(peak.rss_kb, now.rss_kb);
      peak.pss_kb = std::max(peak.pss_kb, now.pss_kb);
      peak.pss_anon_kb = std::max(peak.pss_anon_kb, now.pss_anon_kb);
      peak.pss_shmem_kb = std::max(peak.pss_shmem_kb, now.pss_shmem_kb);
    }
    stop = true;
    for (auto& t : threads) t.join();
    // Every producer is gone once the daemon noticed the closed sockets.
    EXPECT_TRUE(testing::WaitUntil([&] {
      auto state = steady->QueryServiceState();
      return state.ok() && state->producers.empty();
    }, kWaitMs));
    end_session(restarting.get(), nullptr);
    end_session(steady.get(), steady_trace);
    return peak;
  };

  // The consumers' connections are accepted once they got an answer.
  ASSERT_TRUE(steady->QueryServiceState().ok());
  ASSERT_TRUE(restarting->QueryServiceState().ok());
  const ProcessSample before = Sample(pid);
  // sluiced gives freed heap back within a second or two (malloc_trim); a
  // sample is taken once that happened, or after kWaitMs when it does not
  // (a leak).
  constexpr uint64_t kAnonSlackKb = 4 * 1024;
  auto settled_sample = [&] {
    ProcessSample s = Sample(pid);
    if (kSanitized) return s;
    testing::WaitUntil([&] {
      s = Sample(pid);
      return s.pss_anon_kb <= before.pss_anon_kb + kAnonSlackKb;
    }, kWaitMs);
    return s;
  };
  // A warm-up round: first use of the allocator's arenas and the kernel's
  // socket caches is not counted as growth.
  ChurnCounts warm_counts;
  run_round(std::min<uint64_t>(2000, seconds * 1000), &warm_counts, nullptr);
  const ProcessSample warm = settled_sample();
  ChurnCounts counts;
  std::vector<TracePacket> trace;
  const uint64_t started = NowMs();
  const ProcessSample peak = run_round(seconds * 1000, &counts, &trace);
  const uint64_t elapsed = NowMs() - started;
  const ProcessSample after = settled_sample();

  printf("[ churn    ] %u producers, %.1f s: %llu connections (%.0f/s), %llu with data, "
         "%llu packets, %llu connect errors\n",
         producers, static_cast<double>(elapsed) / 1000,
         static_cast<unsigned long long>(counts.connections.load()),
         static_cast<double>(counts.connections.load()) * 1000 / static_cast<double>(elapsed),
         static_cast<unsigned long long>(counts.with_data.load()),
         static_cast<unsigned long long>(counts.packets.load()),
         static_cast<unsigned long long>(counts.connect_errors.load()));
  printf("[ churn    ] before:         %s\n", before.Describe().c_str());
  printf("[ churn    ] after warm-up:  %s\n", warm.Describe().c_str());
  printf("[ churn    ] peak (each max): %s\n", peak.Describe().c_str());
  printf("[ churn    ] after:          %s\n", after.Describe().c_str());
  fflush(stdout);

  EXPECT_EQ(counts.connect_errors.load(), 0u) << counts.first_error;
  EXPECT_GT(counts.connections.load(), producers) << "every producer connected more than once";
  EXPECT_GT(counts.with_data.load(), 0u);
  EXPECT_EQ(after.fds, before.fds) << "no fd left behind: " << FdDiff(before, after);
  EXPECT_EQ(after.memfds, 0u) << "every SMB closed";
  EXPECT_EQ(before.memfds, 0u);
  EXPECT_GT(peak.memfds, 0u) << "the producers' SMBs were there while they ran";
  // Memory: back to where it was, within a slack for what the allocator
  // keeps (sluiced trims once more than 2 MiB of its heap is free) and
  // protobuf's lazily built defaults. A leak of 80 bytes per connection
  // passes the slack in a 60 s run (~54 000 connections).
  if (!kSanitized) {
    EXPECT_LE(after.pss_anon_kb, before.pss_anon_kb + kAnonSlackKb)
        << "before " << before.Describe() << " after " << after.Describe() << "\n"
        << LargeAnonMappings(pid);
    EXPECT_LE(after.pss_anon_kb, warm.pss_anon_kb + kAnonSlackKb) << "no growth since the warm-up";
  }
  EXPECT_EQ(after.pss_shmem_kb, 0u) << "SMB mappings are gone";
  // The steady session saw the churn and says what it cost: producers came
  // and went, and none lost data on the way out (they destroy their writers
  // before they leave) or was taken for one that does not read.
  const perfetto::protos::TraceStats* stats = nullptr;
  uint64_t test_packets = 0;
  for (const TracePacket& p : trace) {
    if (p.has_trace_stats()) stats = &p.trace_stats();
    test_packets += p.has_synchronization_marker();
  }
  ASSERT_NE(stats, nullptr) << "the steady session's trace ends with its TraceStats";
  const auto& faults = stats->sluice_service_stats();
  EXPECT_GT(faults.producers_disconnected(), producers);
  EXPECT_EQ(faults.producers_disconnected_not_reading(), 0u);
  EXPECT_EQ(faults.producers_disconnected_for_faults(), 0u);
  EXPECT_EQ(faults.chunks_lost_being_written(), 0u);
  EXPECT_EQ(faults.chunks_lost_writer_unknown(), 0u);
  EXPECT_GT(test_packets, 0u);
  EXPECT_TRUE(daemon_.running()) << daemon_.Describe();
  daemon_.Terminate(30000);
  EXPECT_TRUE(daemon_.exited_normally_with(0)) << daemon_.Describe();
}

}  // namespace
}  // namespace sluice
