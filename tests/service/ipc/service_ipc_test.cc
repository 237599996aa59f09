// Integration tests of sluiced's IPC with real processes: the service
// (TracingService + IpcServer) runs in the test process, producers run in
// child processes (this test binary re-executed with SLUICE_CHILD_ROLE set,
// running ServiceIpcChild.DISABLED_Run), and the consumer talks to the
// service over the consumer socket with ConsumerIpcClient.
//
// Children report to the parent through a pipe (fd kResultFd), one line:
// "done lost=<packets the TraceWriters dropped>".
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "gtest/gtest.h"
#include "perfetto/common/trace_stats.pb.h"
#include "service/ipc/consumer_ipc_client.h"
#include "service/ipc/ipc_frame.h"
#include "service/ipc/ipc_server.h"
#include "service/ipc/producer_ipc_client.h"
#include "service/tracing_service.h"
#include "shm/base/file_util.h"
#include "shm/shared_memory_arbiter.h"
#include "sluice/ipc.pb.h"
#include "tests/service/service_test_util.h"

extern char** environ;

namespace sluice {
namespace {

using perfetto::protos::TracePacket;
using testing::TestPacketId;

constexpr int kResultFd = 100;

// ---- Child side ------------------------------------------------------------------

class ChildEndpoint : public Producer {
 public:
  void SetupDataSource(DataSourceInstanceId, const perfetto::protos::DataSourceConfig&) override {}
  void StartDataSource(DataSourceInstanceId id,
                       const perfetto::protos::DataSourceConfig& config) override {
    std::lock_guard<std::mutex> lock(mu);
    instance = id;
    target_buffer = config.target_buffer();
    started = true;
    cv.notify_all();
  }
  void StopDataSource(DataSourceInstanceId id) override {
    if (arbiter) arbiter->FlushPendingCommitData();
    if (connection) connection->NotifyDataSourceStopped(id);
    std::lock_guard<std::mutex> lock(mu);
    stopped = true;
    cv.notify_all();
  }
  void Flush(FlushRequestId id, const std::vector<DataSourceInstanceId>&) override {
    if (arbiter) arbiter->FlushPendingCommitData(id);
    if (connection) connection->NotifyFlushComplete(id);
  }
  void ClearIncrementalState(const std::vector<DataSourceInstanceId>&) override {}
  void OnDisconnect(const std::string&) override {
    std::lock_guard<std::mutex> lock(mu);
    disconnected = true;
    cv.notify_all();
  }
  template <typename Pred>
  bool WaitFor(Pred pred, int timeout_ms) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), pred);
  }

  std::mutex mu;
  std::condition_variable cv;
  bool started = false, stopped = false, disconnected = false;
  DataSourceInstanceId instance = 0;
  uint32_t target_buffer = 0;
  SharedMemoryArbiter* arbiter = nullptr;
  ProducerEndpoint* connection = nullptr;
};

uint32_t EnvU32(const char* name, uint32_t def) {
  const char* v = getenv(name);
  return v ? static_cast<uint32_t>(strtoul(v, nullptr, 10)) : def;
}

void Report(const std::string& line) {
  std::string l = line + "\n";
  ssize_t r = write(kResultFd, l.data(), l.size());
  (void)r;
}

// A well-behaved producer: `writers` threads each write `packets` test
// packets, flush, report, then wait for the stop.
int RunGoodChild(const std::string& socket) {
  uint32_t tag = EnvU32("SLUICE_CHILD_TAG", 1);
  uint32_t writers = EnvU32("SLUICE_CHILD_WRITERS", 1);
  uint32_t packets = EnvU32("SLUICE_CHILD_PACKETS", 100);
  bool crash = EnvU32("SLUICE_CHILD_CRASH", 0) != 0;
  ChildEndpoint endpoint;
  auto client = ProducerIpcClient::Connect(socket, &endpoint,
                                           ProducerOptions{"child", 4u << 20, 4096});
  if (!client.ok()) {
    fprintf(stderr, "child: %s\n", client.status().message().c_str());
    return 2;
  }
  ArbiterOptions options;
  options.stall_timeout_ms = 20000;
  // A crashing producer never drains by itself: what it completed stays in
  // the SMB, for the service to scrape.
  if (crash) options.commit_batch_entries = 1u << 30;
  auto arbiter = std::make_unique<SharedMemoryArbiter>(
      client.value()->shm_start(), client.value()->shm_size(), client.value()->shm_page_size(),
      client.value()->commit_data_sink(), options);
  endpoint.arbiter = arbiter.get();
  endpoint.connection = client.value().get();
  DataSourceDescriptor d;
  d.name = "test.ds";
  d.will_notify_on_stop = true;
  client.value()->RegisterDataSource(d);
  if (!endpoint.WaitFor([&] { return endpoint.started; }, 30000)) return 3;

  std::vector<std::unique_ptr<TraceWriter>> ws;
  for (uint32_t w = 0; w < writers; w++)
    ws.push_back(arbiter->CreateTraceWriter(endpoint.target_buffer, BufferExhaustedPolicy::kStall));
  if (crash) {
    arbiter->FlushPendingCommitData();  // Only the writer registrations.
    for (uint32_t i = 0; i < packets; i++) testing::WriteTestPacket(ws[0].get(), {tag, 0, i});
    Report("done lost=0");
    _exit(0);  // No flush, no destructors: the SMB holds the Complete chunks.
  }
  std::atomic<uint64_t> lost{0};
  std::vector<std::thread> threads;
  for (uint32_t w = 0; w < writers; w++) {
    threads.emplace_back([&, w] {
      for (uint32_t i = 0; i < packets; i++) testing::WriteTestPacket(ws[w].get(), {tag, w, i});
      ws[w]->Flush();
      lost += ws[w]->packets_lost();
    });
  }
  for (auto& t : threads) t.join();
  ws.clear();
  arbiter->FlushPendingCommitData();
  Report("done lost=" + std::to_string(lost.load()));
  endpoint.WaitFor([&] { return endpoint.stopped || endpoint.disconnected; }, 60000);
  endpoint.arbiter = nullptr;
  arbiter.reset();
  client.value().reset();
  return 0;
}

// A hostile producer: scribbles over its SMB and sends nonsense commits,
// patches and writer registrations until the service drops it.
int RunHostileChild(const std::string& socket) {
  ChildEndpoint endpoint;
  auto client = ProducerIpcClient::Connect(socket, &endpoint, ProducerOptions{"hostile", 1u << 20, 4096});
  if (!client.ok()) return 2;
  ProducerIpcClient* c = client.value().get();
  endpoint.connection = c;
  c->RegisterDataSource(DataSourceDescriptor{"test.ds"});
  if (!endpoint.WaitFor([&] { return endpoint.started; }, 30000)) return 3;
  std::mt19937 rng32(1234);
  auto rng = [&rng32]() -> uint32_t { return static_cast<uint32_t>(rng32()); };
  const uint32_t pages = c->shm_size() / c->shm_page_size();
  uint64_t sent = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (!endpoint.disconnected && std::chrono::steady_clock::now() < deadline) {
    // Random bytes everywhere, then some plausible-looking chunks: Complete
    // states with garbage headers.
    uint8_t* smb = c->shm_start();
    for (uint32_t i = 0; i < c->shm_size() / 4; i += 97) reinterpret_cast<uint32_t*>(smb)[i] = rng();
    for (uint32_t p = 0; p < pages; p += 3) {
      uint32_t header = (static_cast<uint32_t>(rng() % 6) << 28) | (rng() & 0x0fffffff);
      memcpy(smb + static_cast<size_t>(p) * c->shm_page_size(), &header, 4);
    }
    CommitDataRequest req;
    for (int i = 0; i < 50; i++)
      req.chunks_to_move.push_back(ChunkToMove{static_cast<uint32_t>(rng() % (2 * pages)),
                                               static_cast<uint32_t>(rng() % 16),
                                               rng() % 2 ? endpoint.target_buffer : rng()});
    for (int i = 0; i < 20; i++) {
      ChunkPatch p;
      p.target_buffer = endpoint.target_buffer;
      p.writer_id = static_cast<uint16_t>(rng());
      p.chunk_id = rng() % 64;
      p.offset = rng();
      p.has_more_patches = rng() % 2;
      req.chunks_to_patch.push_back(p);
    }
    c->commit_data_sink()->RegisterTraceWriter(static_cast<uint16_t>(1 + rng() % 65535), rng());
    c->commit_data_sink()->CommitData(req);
    sent++;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Last, a frame that is not a ProducerToService at all.
  std::string junk;
  AppendFrame(std::string("\xff\xff\xff\xff\x0f garbage", 13), &junk);
  c->SendRawForTesting(junk);
  Report("done sent=" + std::to_string(sent));
  return 0;
}

TEST(ServiceIpcChild, DISABLED_Run) {
  const char* role = getenv("SLUICE_CHILD_ROLE");
  const char* socket = getenv("SLUICE_CHILD_SOCKET");
  if (!role || !socket) GTEST_SKIP() << "runs only as a child of ServiceIpcTest";
  std::string r = role;
  int code = r == "hostile" ? RunHostileChild(socket) : RunGoodChild(socket);
  fflush(nullptr);
  _exit(code);
}

// ---- Parent side -----------------------------------------------------------------

struct Child {
  pid_t pid = -1;
  int result_fd = -1;
  std::string result;
};

class ServiceIpcTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(TracingServiceOptions{}); }
  void StartServer(TracingServiceOptions service_options) {
    if (server_) {
      server_.reset();
      service_.reset();
      loop_thread_.reset();
      std::string cmd = "rm -rf " + dir_;
      ASSERT_EQ(system(cmd.c_str()), 0);
    }
    char dir[] = "/tmp/sluice-ipc-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    loop_thread_ = std::make_unique<EventLoopThread>();
    service_ = std::make_unique<TracingService>(loop_thread_->loop(), std::move(service_options));
    IpcServerOptions options;
    options.producer_socket_path = dir_ + "/run/producer.sock";
    options.consumer_socket_path = dir_ + "/run/consumer.sock";
    auto server = IpcServer::Create(service_.get(), options);
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(server.value());
  }
  void TearDown() override {
    for (Child& c : children_) {
      if (c.pid > 0) {
        kill(c.pid, SIGKILL);
        waitpid(c.pid, nullptr, 0);
      }
      if (c.result_fd >= 0) close(c.result_fd);
    }
    server_.reset();
    service_.reset();
    loop_thread_.reset();
    std::string cmd = "rm -rf " + dir_;
    ASSERT_EQ(system(cmd.c_str()), 0);
  }
  std::string producer_socket() const { return dir_ + "/run/producer.sock"; }
  std::string consumer_socket() const { return dir_ + "/run/consumer.sock"; }

  // Starts this binary as a child producer with `env` added.
  Child* Spawn(std::vector<std::string> env) {
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
    bool has_socket = false;
    for (auto& e : env) has_socket |= e.rfind("SLUICE_CHILD_SOCKET=", 0) == 0;
    if (!has_socket) env.push_back("SLUICE_CHILD_SOCKET=" + producer_socket());
    std::vector<std::string> env_all;
    for (char** e = environ; *e; e++) env_all.push_back(*e);
    for (auto& e : env) env_all.push_back(e);
    std::vector<char*> envp;
    for (auto& e : env_all) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string self = "/proc/self/exe";
    std::string filter = "--gtest_filter=ServiceIpcChild.DISABLED_Run";
    std::string disabled = "--gtest_also_run_disabled_tests";
    char* argv[] = {self.data(), filter.data(), disabled.data(), nullptr};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], kResultFd);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    int r = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    EXPECT_EQ(r, 0);
    children_.push_back(Child{pid, fds[0], ""});
    return &children_.back();
  }

  // Waits for the child's result line.
  bool WaitResult(Child* c, int timeout_ms = 120000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (c->result.find('\n') == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) return false;
      pollfd pfd{c->result_fd, POLLIN, 0};
      if (poll(&pfd, 1, static_cast<int>(left)) <= 0) continue;
      char buf[256];
      ssize_t n = read(c->result_fd, buf, sizeof(buf));
      if (n <= 0) return false;
      c->result.append(buf, static_cast<size_t>(n));
    }
    return true;
  }
  static uint64_t ResultValue(const Child& c, const std::string& key) {
    size_t pos = c.result.find(key + "=");
    return pos == std::string::npos ? ~0ull : strtoull(c.result.c_str() + pos + key.size() + 1, nullptr, 10);
  }
  int WaitExit(Child* c) {
    int status = 0;
    waitpid(c->pid, &status, 0);
    c->pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::unique_ptr<ConsumerIpcClient> ConnectConsumer() {
    auto c = ConsumerIpcClient::Connect(consumer_socket());
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c.value()) : nullptr;
  }

  std::vector<TracePacket> StopAndRead(ConsumerIpcClient* consumer) {
    EXPECT_TRUE(consumer->DisableTracing().ok());
    std::string error;
    EXPECT_TRUE(consumer->WaitForTracingDisabled(60000, &error));
    EXPECT_EQ(error, "");
    return testing::ReadAllPackets(consumer);
  }

  std::string dir_;
  std::unique_ptr<EventLoopThread> loop_thread_;
  std::unique_ptr<TracingService> service_;
  std::unique_ptr<IpcServer> server_;
  std::deque<Child> children_;
};

struct Collected {
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> seqs;
  std::map<std::pair<uint32_t, uint32_t>, std::set<uint32_t>> seq_ids;
  std::map<uint32_t, std::set<int32_t>> pids;  // producer tag -> trusted_pid
  std::set<int32_t> uids;
  perfetto::protos::TraceStats stats;
  int stats_packets = 0;
};

Collected Collect(const std::vector<TracePacket>& packets) {
  Collected c;
  for (const TracePacket& p : packets) {
    if (p.has_trace_stats()) {
      c.stats = p.trace_stats();
      c.stats_packets++;
    }
    TestPacketId id;
    if (!testing::ParseTestPacket(p, &id)) continue;
    c.seqs[{id.producer, id.writer}].push_back(id.seq);
    c.seq_ids[{id.producer, id.writer}].insert(p.trusted_packet_sequence_id());
    c.pids[id.producer].insert(p.trusted_pid());
    c.uids.insert(p.trusted_uid());
  }
  return c;
}

perfetto::protos::TraceConfig Config(uint32_t buffer_kb) {
  auto config = testing::MakeConfig(buffer_kb, "test.ds");
  config.set_flush_timeout_ms(10000);
  return config;
}

TEST_F(ServiceIpcTest, TwoProducersEveryPacketExactlyOnceInOrder) {
  constexpr uint32_t kWriters = 4, kPackets = 2000;
  auto consumer = ConnectConsumer();
  ASSERT_TRUE(consumer);
  ASSERT_TRUE(consumer->EnableTracing(Config(64 * 1024)).ok());
  Child* a = Spawn({"SLUICE_CHILD_ROLE=good", "SLUICE_CHILD_TAG=1", "SLUICE_CHILD_WRITERS=4",
                    "SLUICE_CHILD_PACKETS=2000"});
  Child* b = Spawn({"SLUICE_CHILD_ROLE=good", "SLUICE_CHILD_TAG=2", "SLUICE_CHILD_WRITERS=4",
                    "SLUICE_CHILD_PACKETS=2000"});
  ASSERT_TRUE(WaitResult(a));
  ASSERT_TRUE(WaitResult(b));
  EXPECT_EQ(ResultValue(*a, "lost"), 0u);
  EXPECT_EQ(ResultValue(*b, "lost"), 0u);
  auto state = consumer->QueryServiceState();
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->producers.size(), 2u);
  const pid_t pid_a = a->pid, pid_b = b->pid;
  Collected c = Collect(StopAndRead(consumer.get()));
  EXPECT_EQ(WaitExit(a), 0);
  EXPECT_EQ(WaitExit(b), 0);

  ASSERT_EQ(c.seqs.size(), 2 * kWriters);
  std::set<uint32_t> all_ids;
  for (auto& [key, seqs] : c.seqs) {
    ASSERT_EQ(seqs.size(), kPackets) << "producer " << key.first << " writer " << key.second;
    for (uint32_t i = 0; i < kPackets; i++) ASSERT_EQ(seqs[i], i);
    ASSERT_EQ(c.seq_ids[key].size(), 1u);
    all_ids.insert(*c.seq_ids[key].begin());
  }
  EXPECT_EQ(all_ids.size(), 2 * kWriters) << "a trusted sequence id per producer and writer";
  EXPECT_EQ(c.pids[1], std::set<int32_t>{pid_a}) << "trusted_pid from SO_PEERCRED";
  EXPECT_EQ(c.pids[2], std::set<int32_t>{pid_b});
  EXPECT_EQ(c.uids, std::set<int32_t>{static_cast<int32_t>(getuid())});
  ASSERT_EQ(c.stats_packets, 1);
  EXPECT_EQ(c.stats.buffer_stats(0).chunks_overwritten(), 0u);
  EXPECT_EQ(c.stats.buffer_stats(0).abi_violations(), 0u);
  EXPECT_EQ(c.stats.final_flush_outcome(), perfetto::protos::TraceStats::FINAL_FLUSH_SUCCEEDED);
  EXPECT_EQ(c.stats.producers_seen(), 2u);
}

TEST_F(ServiceIpcTest, LossInASmallBufferEqualsTheStats) {
  // Every chunk holds exactly kTestPacketsPerChunk packets (see
  // service_test_util.h; kPackets is a multiple of it), nothing is read
  // before the end: each packet missing from the trace is in an overwritten
  // chunk, or was dropped by its writer (reported by the child).
  constexpr uint32_t kWriters = 4, kPackets = 2000;
  static_assert(kPackets % testing::kTestPacketsPerChunk == 0);
  auto consumer = ConnectConsumer();
  ASSERT_TRUE(consumer);
  ASSERT_TRUE(consumer->EnableTracing(Config(1024)).ok());
  Child* a = Spawn({"SLUICE_CHILD_ROLE=good", "SLUICE_CHILD_TAG=1", "SLUICE_CHILD_WRITERS=4",
                    "SLUICE_CHILD_PACKETS=2000"});
  Child* b = Spawn({"SLUICE_CHILD_ROLE=good", "SLUICE_CHILD_TAG=2", "SLUICE_CHILD_WRITERS=4",
                    "SLUICE_CHILD_PACKETS=2000"});
  ASSERT_TRUE(WaitResult(a));
  ASSERT_TRUE(WaitResult(b));
  uint64_t lost_in_writers = ResultValue(*a, "lost") + ResultValue(*b, "lost");
  Collected c = Collect(StopAndRead(consumer.get()));
  EXPECT_EQ(WaitExit(a), 0);
  EXPECT_EQ(WaitExit(b), 0);

  uint64_t present = 0;
  for (auto& [key, seqs] : c.seqs) {
    present += seqs.size();
    for (size_t i = 1; i < seqs.size(); i++) ASSERT_LT(seqs[i - 1], seqs[i]) << "order and uniqueness";
  }
  const uint64_t total = 2ull * kWriters * kPackets;
  const uint64_t missing = total - present;
  const auto& bs = c.stats.buffer_stats(0);
  EXPECT_GT(bs.chunks_overwritten(), 0u) << "the buffer is meant to wrap";
  EXPECT_EQ(missing, bs.chunks_overwritten() * testing::kTestPacketsPerChunk + lost_in_writers)
      << "present " << present << " overwritten chunks " << bs.chunks_overwritten()
      << " lost in writers " << lost_in_writers;
  EXPECT_EQ(bs.chunks_discarded(), 0u);
  EXPECT_EQ(bs.abi_violations(), 0u);
}

TEST_F(ServiceIpcTest, HostileProducerCannotHurtAGoodOne) {
  // Not disconnected for its faults, so that it keeps going while the good
  // producer writes; its final garbage frame gets it dropped.
  TracingServiceOptions options;
  options.abi_violations_before_disconnect = 1u << 30;
  StartServer(options);
  constexpr uint32_t kPackets = 20000;
  auto consumer = ConnectConsumer();
  ASSERT_TRUE(consumer);
  ASSERT_TRUE(consumer->EnableTracing(Config(64 * 1024)).ok());
  Child* hostile = Spawn({"SLUICE_CHILD_ROLE=hostile"});
  Child* good = Spawn({"SLUICE_CHILD_ROLE=good", "SLUICE_CHILD_TAG=7", "SLUICE_CHILD_WRITERS=2",
                       "SLUICE_CHILD_PACKETS=20000"});
  ASSERT_TRUE(WaitResult(hostile));
  ASSERT_TRUE(WaitResult(good));
  EXPECT_GT(ResultValue(*hostile, "sent"), 0u);
  EXPECT_EQ(ResultValue(*good, "lost"), 0u);
  Collected c = Collect(StopAndRead(consumer.get()));
  EXPECT_EQ(WaitExit(good), 0);
  EXPECT_EQ(WaitExit(hostile), 0);
  for (uint32_t w = 0; w < 2; w++) {
    auto& seqs = c.seqs[std::make_pair(7u, w)];
    ASSERT_EQ(seqs.size(), kPackets) << "writer " << w;
    for (uint32_t i = 0; i < kPackets; i++) ASSERT_EQ(seqs[i], i);
  }
  ServiceStats ss = service_->GetServiceStats();
  EXPECT_GT(ss.abi_violations, 1000u);
  EXPECT_EQ(ss.ipc_connections_dropped, 1u) << "the garbage frame";
  EXPECT_GT(c.stats.buffer_stats(0).abi_violations() + ss.chunks_discarded, 0u);
  // The service is alive and serves a new session.
  auto state = consumer->QueryServiceState();
  ASSERT_TRUE(state.ok());
  EXPECT_TRUE(consumer->FreeBuffers().ok());
  EXPECT_TRUE(consumer->EnableTracing(Config(1024)).ok());
}

// sluiced --consumer-uid-allowlist / --consumer-gid-allowlist: a consumer
// outside both is told why on every request and served nothing; one whose
// group is listed records.
TEST_F(ServiceIpcTest, ConsumerAllowlistsRefuseWithTheReason) {
  TracingServiceOptions options;
  options.consumer_uid_allowlist = {getuid() + 12345};
  options.consumer_gid_allowlist = {getgid() + 12345};
  StartServer(options);
  auto refused = ConnectConsumer();
  ASSERT_TRUE(refused);
  Status enabled = refused->EnableTracing(Config(1024));
  ASSERT_FALSE(enabled.ok());
  EXPECT_NE(enabled.message().find("uid " + std::to_string(getuid()) +
                                   " may not record or read traces here"),
            std::string::npos)
      << enabled.message();
  EXPECT_NE(enabled.message().find("--consumer-gid-allowlist"), std::string::npos);
  EXPECT_FALSE(refused->QueryServiceState().ok());

  options.consumer_gid_allowlist = {getgid()};
  StartServer(options);
  auto allowed = ConnectConsumer();
  ASSERT_TRUE(allowed);
  EXPECT_TRUE(allowed->EnableTracing(Config(1024)).ok());
}

TEST_F(ServiceIpcTest, ProducerThatDiesLeavesItsCompleteChunks) {
  constexpr uint32_t kPackets = 100;  // 12 full chunks, 4 packets in the 13th.
  auto consumer = ConnectConsumer();
  ASSERT_TRUE(consumer);
  ASSERT_TRUE(consumer->EnableTracing(Config(4096)).ok());
  Child* c = Spawn({"SLUICE_CHILD_ROLE=good", "SLUICE_CHILD_CRASH=1", "SLUICE_CHILD_TAG=3",
                    "SLUICE_CHILD_PACKETS=100"});
  ASSERT_TRUE(WaitResult(c));
  EXPECT_EQ(WaitExit(c), 0);
  // The service notices the closed socket and scrapes the SMB.
  for (int i = 0; i < 500 && service_->GetServiceStats().producers_connected > 0; i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  Collected got = Collect(StopAndRead(consumer.get()));
  auto& seqs = got.seqs[std::make_pair(3u, 0u)];
  const uint32_t complete = kPackets / testing::kTestPacketsPerChunk * testing::kTestPacketsPerChunk;
  ASSERT_EQ(seqs.size(), complete);
  for (uint32_t i = 0; i < complete; i++) ASSERT_EQ(seqs[i], i);
  EXPECT_EQ(service_->GetServiceStats().chunks_scraped, complete / testing::kTestPacketsPerChunk);
}

TEST_F(ServiceIpcTest, WriteIntoFileWithTheConsumersFd) {
  auto consumer = ConnectConsumer();
  ASSERT_TRUE(consumer);
  std::string path = dir_ + "/trace.pftrace";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  auto config = Config(4096);
  config.set_write_into_file(true);
  config.set_file_write_period_ms(100);
  ASSERT_TRUE(consumer->EnableTracing(config, fd).ok());
  close(fd);
  Child* c = Spawn({"SLUICE_CHILD_ROLE=good", "SLUICE_CHILD_TAG=4", "SLUICE_CHILD_PACKETS=800"});
  ASSERT_TRUE(WaitResult(c));
  ASSERT_TRUE(consumer->DisableTracing().ok());
  std::string error;
  ASSERT_TRUE(consumer->WaitForTracingDisabled(60000, &error));
  EXPECT_EQ(WaitExit(c), 0);
  std::string bytes;
  {
    int rfd = open(path.c_str(), O_RDONLY);
    char buf[1 << 16];
    ssize_t n;
    while ((n = read(rfd, buf, sizeof(buf))) > 0) bytes.append(buf, static_cast<size_t>(n));
    close(rfd);
  }
  bool ok = false;
  const std::vector<TracePacket> packets = testing::ParseTraceBytes(bytes, &ok);
  Collected got = Collect(packets);
  EXPECT_TRUE(ok);
  EXPECT_EQ(got.seqs[std::make_pair(4u, 0u)].size(), 800u);
  EXPECT_EQ(got.stats_packets, 1);
  // sluiced's file describes sluice's own fields once, as in-process
  // traces do (service/sluice_extensions.h).
  int descriptors = 0;
  for (const TracePacket& p : packets) descriptors += p.has_extension_descriptor() ? 1 : 0;
  EXPECT_EQ(descriptors, 1);
}

// Detach, list, clone twice, attach and stop, each over its own consumer
// connection; the ring session's file is written by sluiced into the fd the
// first consumer passed.
TEST_F(ServiceIpcTest, DetachListCloneAttachStopOverTheSocket) {
  const std::string path = dir_ + "/ring.pftrace";
  {
    auto consumer = ConnectConsumer();
    ASSERT_TRUE(consumer);
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    SessionOptions options;
    options.key = "over-ipc";
    options.output_path = path;
    options.output_temp_path = path;
    ASSERT_TRUE(consumer->EnableTracing(Config(4096), fd, options).ok());
    close(fd);
    ASSERT_TRUE(consumer->Detach("").ok());
  }  // The connection closes; the session runs on.
  Child* c = Spawn({"SLUICE_CHILD_ROLE=good", "SLUICE_CHILD_TAG=5", "SLUICE_CHILD_PACKETS=700"});
  ASSERT_TRUE(WaitResult(c));

  auto lister = ConnectConsumer();
  auto list = lister->ListSessions();
  ASSERT_TRUE(list.ok()) << list.status().message();
  ASSERT_EQ(list->sessions.size(), 1u);
  const SessionInfo& listed = list->sessions[0];
  EXPECT_EQ(listed.key, "over-ipc");
  EXPECT_TRUE(listed.detached);
  EXPECT_EQ(listed.state, SessionInfo::State::kStarted);
  EXPECT_EQ(listed.output_path, path);
  ASSERT_EQ(listed.buffers.size(), 1u);
  EXPECT_GT(listed.buffers[0].bytes_held, 700u * testing::kTestPacketBytes);

  for (int round = 0; round < 2; round++) {
    auto cloner = ConnectConsumer();
    auto cloned = cloner->CloneSession("over-ipc");
    ASSERT_TRUE(cloned.ok()) << cloned.status().message();
    EXPECT_TRUE(cloned->flushed);
    EXPECT_EQ(cloned->source_id, listed.id);
    Collected got = Collect(testing::ReadAllPackets(cloner.get()));
    EXPECT_EQ(got.seqs[std::make_pair(5u, 0u)].size(), 700u) << "round " << round;
    EXPECT_EQ(got.stats_packets, 1);
    ASSERT_TRUE(cloner->FreeBuffers().ok());
  }

  auto attached = ConnectConsumer();
  auto info = attached->Attach("over-ipc");
  ASSERT_TRUE(info.ok()) << info.status().message();
  EXPECT_EQ(info->config.buffers(0).size_kb(), 4096u);
  auto twice = ConnectConsumer()->Attach("over-ipc");
  EXPECT_FALSE(twice.ok());
  ASSERT_TRUE(attached->DisableTracing().ok());
  std::string error = "unset";
  ASSERT_TRUE(attached->WaitForTracingDisabled(60000, &error));
  EXPECT_EQ(error, "");
  EXPECT_EQ(WaitExit(c), 0);
  ASSERT_TRUE(attached->FreeBuffers().ok());

  auto bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  bool ok = false;
  Collected all = Collect(testing::ParseTraceBytes(*bytes, &ok));
  EXPECT_TRUE(ok);
  EXPECT_EQ(all.seqs[std::make_pair(5u, 0u)].size(), 700u);
  EXPECT_EQ(all.stats_packets, 1);
  EXPECT_TRUE(lister->ListSessions()->sessions.empty());
}

// ActivateTriggers and its answer over the producer socket, CloneTriggerHit
// over the consumer socket, and the Trigger packet naming the producer.
TEST_F(ServiceIpcTest, TriggersOverTheSockets) {
  using TriggerConfig = perfetto::protos::TraceConfig::TriggerConfig;
  auto with_trigger = [](TriggerConfig::TriggerMode mode, const std::string& name) {
    auto config = Config(256);
    auto* triggers = config.mutable_trigger_config();
    triggers->set_trigger_mode(mode);
    triggers->set_trigger_timeout_ms(600000);
    triggers->add_triggers()->set_name(name);
    return config;
  };
  auto snapshots = ConnectConsumer();
  SessionOptions options;
  options.key = "snap-session";
  ASSERT_TRUE(snapshots->EnableTracing(with_trigger(TriggerConfig::CLONE_SNAPSHOT, "snap"), -1, options).ok());
  auto stopping = ConnectConsumer();
  ASSERT_TRUE(stopping->EnableTracing(with_trigger(TriggerConfig::STOP_TRACING, "halt")).ok());

  testing::TestProducer trigger_app;
  auto client = ProducerIpcClient::Connect(producer_socket(), &trigger_app, ProducerOptions{"ipc-trigger", 0, 0});
  ASSERT_TRUE(client.ok()) << client.status().message();
  trigger_app.Attach(std::move(client.value()));
  EXPECT_EQ(trigger_app.FireTriggers({"nobody"}), 0);
  EXPECT_EQ(trigger_app.FireTriggers({"snap", "halt"}), 2);

  EXPECT_FALSE(snapshots->WaitForTracingDisabled(60000));  // Returns at the trigger.
  EXPECT_EQ(snapshots->TakeCloneTriggers(), std::vector<std::string>{"snap"});
  std::string error = "unset";
  ASSERT_TRUE(stopping->WaitForTracingDisabled(60000, &error));
  EXPECT_EQ(error, "");
  int triggers = 0;
  for (const TracePacket& p : testing::ReadAllPackets(stopping.get())) {
    if (!p.has_trigger()) continue;
    triggers++;
    EXPECT_EQ(p.trigger().trigger_name(), "halt");
    EXPECT_EQ(p.trigger().producer_name(), "ipc-trigger");
    EXPECT_EQ(p.trigger().trusted_producer_uid(), static_cast<int32_t>(getuid()));
  }
  EXPECT_EQ(triggers, 1);
  trigger_app.Detach();
}

TEST_F(ServiceIpcTest, MalformedFramesDropTheConnection) {
  auto send_raw = [&](const std::string& path, const std::string& bytes) {
    auto sock = ConnectUnixSocket(path);
    ASSERT_TRUE(sock.ok());
    ASSERT_TRUE(SendAll(sock.value().get(), bytes.data(), bytes.size()));
    // The service closes its end: read returns 0.
    char c;
    pollfd pfd{sock.value().get(), POLLIN, 0};
    ASSERT_EQ(poll(&pfd, 1, 10000), 1);
    EXPECT_EQ(read(sock.value().get(), &c, 1), 0);
  };
  const uint64_t before = service_->GetServiceStats().ipc_connections_dropped;
  // A length above the limit.
  send_raw(producer_socket(), std::string("\xff\xff\xff\x7f", 4));
  // A frame that does not parse.
  std::string junk;
  AppendFrame(std::string("\xff\xff\xff\xff", 4), &junk);
  send_raw(producer_socket(), junk);
  send_raw(consumer_socket(), junk);
  // A producer that does not start with InitializeConnection.
  protos::ProducerToService reg;
  reg.mutable_register_data_source()->set_name("x");
  std::string frame;
  AppendFrame(reg.SerializeAsString(), &frame);
  send_raw(producer_socket(), frame);
  for (int i = 0; i < 200 && service_->GetServiceStats().ipc_connections_dropped < before + 4; i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(service_->GetServiceStats().ipc_connections_dropped, before + 4);
  // Still serving.
  auto consumer = ConnectConsumer();
  ASSERT_TRUE(consumer);
  EXPECT_TRUE(consumer->QueryServiceState().ok());
}

TEST_F(ServiceIpcTest, ConsumerErrorsTravelBack) {
  auto consumer = ConnectConsumer();
  ASSERT_TRUE(consumer);
  Status st = consumer->StartTracing();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("EnableTracing"), std::string::npos);
  perfetto::protos::TraceConfig no_buffers;
  EXPECT_FALSE(consumer->EnableTracing(no_buffers).ok());
  // output_path from a root consumer is allowed; the test runs as root only
  // sometimes, so check the non-root refusal text only when not root.
  auto with_path = Config(256);
  with_path.set_write_into_file(true);
  with_path.set_output_path(dir_ + "/by-path.pftrace");
  Status path_st = consumer->EnableTracing(with_path);
  if (getuid() == 0) {
    EXPECT_TRUE(path_st.ok());
  } else {
    EXPECT_FALSE(path_st.ok());
  }
}

std::string SluicedNextToTests() {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "";
  exe[n] = 0;
  return std::string(exe).substr(0, std::string(exe).rfind('/')) + "/sluiced";
}

// The sluiced binary itself (built next to the test binary): it serves
// producers and consumers, logs connects, and on SIGTERM stops the session
// properly, so a write_into_file trace ends with its TraceStats. It stays in
// the foreground without being told (as traced does): the pid the test
// started is the daemon's, so a script's `sluiced & ... kill $!` stops it.
TEST_F(ServiceIpcTest, SluicedBinaryStopsSessionsOnSigterm) {
  const std::string sluiced = SluicedNextToTests();
  if (access(sluiced.c_str(), X_OK) != 0) GTEST_SKIP() << "no sluiced binary next to the test binary";
  std::string psock = dir_ + "/d/producer.sock", csock = dir_ + "/d/consumer.sock";
  std::string log = dir_ + "/sluiced.log";
  std::vector<std::string> args = {sluiced, "--producer-socket", psock, "--consumer-socket", csock};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t daemon = -1;
  ASSERT_EQ(posix_spawn(&daemon, sluiced.c_str(), &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  std::unique_ptr<ConsumerIpcClient> consumer;
  for (int i = 0; i < 500 && !consumer; i++) {
    auto c = ConsumerIpcClient::Connect(csock);
    if (c.ok()) consumer = std::move(c.value());
    else std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(consumer) << "sluiced did not come up";
  struct stat st;
  ASSERT_EQ(stat(psock.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);

  std::string path = dir_ + "/daemon.pftrace";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  auto config = Config(4096);
  config.set_write_into_file(true);
  config.set_file_write_period_ms(100);
  ASSERT_TRUE(consumer->EnableTracing(config, fd).ok());
  close(fd);
  Child* c = Spawn({"SLUICE_CHILD_ROLE=good", "SLUICE_CHILD_TAG=5", "SLUICE_CHILD_PACKETS=800",
                    "SLUICE_CHILD_SOCKET=" + psock});
  ASSERT_TRUE(WaitResult(c));
  int early_status = 0;
  ASSERT_EQ(waitpid(daemon, &early_status, WNOHANG), 0) << "sluiced left the foreground";
  kill(daemon, SIGTERM);
  std::string error;
  EXPECT_TRUE(consumer->WaitForTracingDisabled(30000, &error));
  int status = 0;
  ASSERT_EQ(waitpid(daemon, &status, 0), daemon);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(WaitExit(c), 0);
  EXPECT_NE(access(psock.c_str(), F_OK), 0) << "socket files are removed";

  std::string bytes;
  {
    int rfd = open(path.c_str(), O_RDONLY);
    char buf[1 << 16];
    ssize_t r;
    while ((r = read(rfd, buf, sizeof(buf))) > 0) bytes.append(buf, static_cast<size_t>(r));
    close(rfd);
  }
  bool ok = false;
  Collected got = Collect(testing::ParseTraceBytes(bytes, &ok));
  EXPECT_TRUE(ok);
  EXPECT_EQ(got.seqs[std::make_pair(5u, 0u)].size(), 800u);
  EXPECT_EQ(got.stats_packets, 1);
  std::string log_text;
  {
    int lfd = open(log.c_str(), O_RDONLY);
    char buf[4096];
    ssize_t r;
    while ((r = read(lfd, buf, sizeof(buf))) > 0) log_text.append(buf, static_cast<size_t>(r));
    close(lfd);
  }
  EXPECT_NE(log_text.find("producer 1 'child' connected"), std::string::npos) << log_text;
}

// `sluiced --background` daemonizes: the process started exits 0 once the
// daemon is listening, and the daemon (found as the socket's peer) serves
// until SIGTERM, then removes its sockets. The test is the daemon's
// subreaper while it runs, so that it can wait for the daemon's exit.
TEST_F(ServiceIpcTest, SluicedBinaryDaemonizesWhenAskedTo) {
  const std::string sluiced = SluicedNextToTests();
  if (access(sluiced.c_str(), X_OK) != 0) GTEST_SKIP() << "no sluiced binary next to the test binary";
  const std::string psock = dir_ + "/b/producer.sock", csock = dir_ + "/b/consumer.sock";
  std::vector<std::string> args = {sluiced, "--background", "--producer-socket", psock,
                                   "--consumer-socket", csock};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  struct Unreap {
    ~Unreap() { prctl(PR_SET_CHILD_SUBREAPER, 0); }
  } unreap;
  pid_t parent = -1;
  ASSERT_EQ(posix_spawn(&parent, sluiced.c_str(), nullptr, nullptr, argv.data(), environ), 0);
  int status = 0;
  ASSERT_EQ(waitpid(parent, &status, 0), parent);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;

  // The daemon listens soon after; it is the peer of a connection.
  pid_t daemon = -1;
  for (int i = 0; i < 1000 && daemon <= 0; i++) {
    ScopedFd sock(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", csock.c_str());
    if (connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      ucred cred = {};
      socklen_t len = sizeof(cred);
      if (getsockopt(sock.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) daemon = cred.pid;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ASSERT_GT(daemon, 0) << "the daemon did not come up on " << csock;
  EXPECT_NE(daemon, parent);
  auto consumer = ConsumerIpcClient::Connect(csock);
  ASSERT_TRUE(consumer.ok()) << consumer.status().message();
  EXPECT_TRUE(consumer.value()->QueryServiceState().ok());
  consumer.value().reset();
  ASSERT_EQ(kill(daemon, SIGTERM), 0);
  ASSERT_EQ(waitpid(daemon, &status, 0), daemon);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_NE(access(csock.c_str(), F_OK), 0) << "socket files are removed";
}

}  // namespace
}  // namespace sluice
