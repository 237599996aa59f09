// Faults of producers and consumers against the service, over its real
// sockets (TracingService + IpcServer in this process, producers through
// ProducerIpcClient or a raw socket, consumers through ConsumerIpcClient or a
// raw socket). Each test names the fault, states what it costs the trace,
// and checks that the trace's stats (and `sluice stats`, through
// AnalyzeTraceBytes) say exactly that, and that everything else arrived.
// docs/SERVICE.md ("Faults") describes the behaviour tested here.
//
// No test waits on the wall clock for an outcome: flush and stop timeouts
// are short only so that the tests are quick; the tests wait on conditions
// (with 60 s limits that matter only when something is broken).
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dirent.h>

#include <mutex>
#include <thread>

#include "gtest/gtest.h"
#include "perfetto/common/trace_stats.pb.h"
#include "service/ipc/consumer_ipc_client.h"
#include "service/ipc/ipc_frame.h"
#include "service/ipc/ipc_producer_protocol.h"
#include "service/ipc/ipc_server.h"
#include "service/ipc/producer_ipc_client.h"
#include "service/tracing_service.h"
#include "shm/base/varint.h"
#include "shm/shared_memory.h"
#include "shm/shared_memory_arbiter.h"
#include "sluice/ipc.pb.h"
#include "sluice/service_stats.pb.h"
#include "tests/child_process_test_util.h"
#include "tests/service/service_test_util.h"
#include "user/trace/trace_health.h"

namespace sluice {
namespace {

using perfetto::protos::TracePacket;
using perfetto::protos::TraceStats;
using testing::NowMs;
using testing::TestPacketId;
using testing::TestProducer;
using testing::WaitUntil;

constexpr int kWaitMs = 60000;

size_t OpenFdCount() {
  size_t n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n - 1;  // The DIR's own fd.
}

// A client end of a sluiced socket that speaks frames by hand: a producer or
// consumer that does exactly what a test wants, including nothing at all.
class RawClient {
 public:
  bool Connect(const std::string& path) {
    auto sock = ConnectUnixSocket(path);
    if (!sock.ok()) return false;
    socket_ = std::move(sock.value());
    return true;
  }
  bool Send(const google::protobuf::MessageLite& msg) {
    std::string bytes;
    AppendFrame(msg.SerializeAsString(), &bytes);
    return SendAll(socket_.get(), bytes.data(), bytes.size());
  }
  // One frame into *frame (fds that came with it into fds_); false on EOF,
  // error or after kWaitMs.
  bool ReadFrame(std::string* frame) {
    const uint64_t deadline = NowMs() + kWaitMs;
    for (;;) {
      std::string_view f;
      FrameReader::Result r = reader_.NextFrame(&f);
      if (r == FrameReader::Result::kFrame) {
        frame->assign(f.data(), f.size());
        return true;
      }
      if (r == FrameReader::Result::kError || NowMs() > deadline) return false;
      pollfd pfd{socket_.get(), POLLIN, 0};
      if (poll(&pfd, 1, 100) <= 0) continue;
      size_t available = 0;
      uint8_t* dst = reader_.WritableSpace(64 * 1024, &available);
      ssize_t n = RecvWithFds(socket_.get(), dst, available, &fds_);
      if (n <= 0) return false;
      reader_.CommitWritten(static_cast<size_t>(n));
    }
  }
  // The next answer to a request of this consumer's into *reply, past the
  // service's notifications (request id 0: a session's data sources all
  // started, a clone trigger).
  bool ReadAnswer(protos::ServiceToConsumer* reply) {
    std::string frame;
    while (ReadFrame(&frame)) {
      if (!reply->ParseFromString(frame)) return false;
      if (reply->request_id() != 0) return true;
    }
    return false;
  }
  // True once the service closed its end (everything it sent is read and
  // discarded on the way).
  bool WaitForEof() {
    const uint64_t deadline = NowMs() + kWaitMs;
    char buf[4096];
    while (NowMs() < deadline) {
      pollfd pfd{socket_.get(), POLLIN, 0};
      if (poll(&pfd, 1, 100) <= 0) continue;
      ssize_t n = read(socket_.get(), buf, sizeof(buf));
      if (n == 0) return true;
      if (n < 0 && errno != EAGAIN && errno != EINTR) return true;
    }
    return false;
  }
  int fd() const { return socket_.get(); }
  std::vector<ScopedFd>* fds() { return &fds_; }
  void Close() { socket_.reset(); }

 private:
  ScopedFd socket_;
  FrameReader reader_;
  std::vector<ScopedFd> fds_;
};

// A producer speaking the protocol by hand: connects, registers a data
// source, reads until StartDataSource, writes through a real arbiter whose
// commits it sends itself, and then reads its socket no more.
class MuteProducer : public CommitDataSink {
 public:
  bool Connect(const std::string& path, const std::string& data_source) {
    if (!client_.Connect(path)) return false;
    protos::ProducerToService init;
    init.mutable_initialize_connection()->set_producer_name("mute");
    init.mutable_initialize_connection()->set_shm_size_hint_bytes(64 * 1024);
    init.mutable_initialize_connection()->set_shm_page_size_hint_bytes(4096);
    if (!client_.Send(init)) return false;
    std::string frame;
    protos::ServiceToProducer reply;
    if (!client_.ReadFrame(&frame) || !reply.ParseFromString(frame) || client_.fds()->empty())
      return false;
    const auto& r = reply.initialize_connection_response();
    auto shm = SharedMemory::Attach(client_.fds()->front().release(), r.shm_size_bytes());
    if (!shm.ok()) return false;
    shm_ = std::move(shm.value());
    arbiter_ = std::make_unique<SharedMemoryArbiter>(shm_->start(), shm_->size(),
                                                     r.shm_page_size_bytes(), this);
    protos::ProducerToService reg;
    reg.mutable_register_data_source()->set_name(data_source);
    return client_.Send(reg);
  }
  // Reads frames until StartDataSource; returns its target buffer (0: none).
  uint32_t WaitForStart() {
    std::string frame;
    while (client_.ReadFrame(&frame)) {
      protos::ServiceToProducer msg;
      if (msg.ParseFromString(frame) && msg.has_start_data_source())
        return msg.start_data_source().config().target_buffer();
    }
    return 0;
  }
  SharedMemoryArbiter* arbiter() { return arbiter_.get(); }
  RawClient* client() { return &client_; }

  // CommitDataSink: straight onto the socket.
  void CommitData(const CommitDataRequest& request) override {
    protos::ProducerToService msg;
    CommitDataToProto(request, msg.mutable_commit_data());
    client_.Send(msg);
  }
  void RegisterTraceWriter(uint16_t writer_id, uint32_t target_buffer) override {
    protos::ProducerToService msg;
    SetRegisterTraceWriter(&msg, writer_id, target_buffer);
    client_.Send(msg);
  }
  void UnregisterTraceWriter(uint16_t writer_id) override {
    protos::ProducerToService msg;
    SetUnregisterTraceWriter(&msg, writer_id);
    client_.Send(msg);
  }

 private:
  RawClient client_;
  std::unique_ptr<SharedMemory> shm_;
  std::unique_ptr<SharedMemoryArbiter> arbiter_;
};

// A TestProducer whose Flush callback blocks, unanswered, until released:
// its ProducerIpcClient's receive thread, which runs the callbacks, then
// reads nothing more from the socket.
class StuckProducer : public TestProducer {
 public:
  void Flush(FlushRequestId, const std::vector<DataSourceInstanceId>&) override {
    std::unique_lock<std::mutex> lock(stuck_mu_);
    stuck_ = true;
    stuck_cv_.notify_all();
    stuck_cv_.wait(lock, [this] { return released_; });
  }
  bool WaitUntilStuck() {
    std::unique_lock<std::mutex> lock(stuck_mu_);
    return stuck_cv_.wait_for(lock, std::chrono::milliseconds(kWaitMs), [this] { return stuck_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(stuck_mu_);
    released_ = true;
    stuck_cv_.notify_all();
  }

 private:
  std::mutex stuck_mu_;
  std::condition_variable stuck_cv_;
  bool stuck_ = false;
  bool released_ = false;
};

struct TraceContents {
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> seqs;  // (tag, writer) -> seq
  TraceStats stats;
  int stats_packets = 0;
  TraceHealth health;  // What `sluice stats` reports for the same packets.
  // The seq numbers of the test packets of (tag, writer), in trace order.
  std::vector<uint32_t> Seq(uint32_t tag, uint32_t writer) const {
    auto it = seqs.find({tag, writer});
    return it == seqs.end() ? std::vector<uint32_t>{} : it->second;
  }
  int64_t Row(const std::string& name) const {
    for (const HealthRow& r : health.rows)
      if (r.name == name) return r.value;
    return 0;
  }
};

TraceContents Examine(const std::vector<TracePacket>& packets) {
  TraceContents c;
  std::string bytes;
  for (const TracePacket& p : packets) {
    AppendTracePacketRecord(p.SerializeAsString(), &bytes);
    if (p.has_trace_stats()) {
      c.stats = p.trace_stats();
      c.stats_packets++;
    }
    TestPacketId id;
    if (testing::ParseTestPacket(p, &id)) c.seqs[{id.producer, id.writer}].push_back(id.seq);
  }
  auto health = AnalyzeTraceBytes(bytes);
  if (health.ok()) c.health = std::move(health.value());
  return c;
}

std::vector<uint32_t> Range(uint32_t begin, uint32_t end) {
  std::vector<uint32_t> v;
  for (uint32_t i = begin; i < end; i++) v.push_back(i);
  return v;
}

class TracingServiceFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/sluice-fault-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    loop_thread_ = std::make_unique<EventLoopThread>();
    TracingServiceOptions options;
    options.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> lock(log_mu_);
      log_ += line + "\n";
    };
    service_ = std::make_unique<TracingService>(loop_thread_->loop(), options);
    IpcServerOptions ipc;
    ipc.producer_socket_path = dir_ + "/producer.sock";
    ipc.consumer_socket_path = dir_ + "/consumer.sock";
    auto server = IpcServer::Create(service_.get(), ipc);
    ASSERT_TRUE(server.ok()) << server.status().message();
    server_ = std::move(server.value());
  }
  void TearDown() override {
    server_.reset();
    service_.reset();
    loop_thread_.reset();
    std::string cmd = "rm -rf " + dir_;
    ASSERT_EQ(system(cmd.c_str()), 0);
  }
  std::string producer_socket() const { return dir_ + "/producer.sock"; }
  std::string consumer_socket() const { return dir_ + "/consumer.sock"; }
  std::string log() {
    std::lock_guard<std::mutex> lock(log_mu_);
    return log_;
  }

  // `producer` connected over the producer socket with data source `ds`.
  void ConnectOverIpc(TestProducer* producer, const std::string& name, const std::string& ds) {
    auto client = ProducerIpcClient::Connect(producer_socket(), producer,
                                             ProducerOptions{name, 256 * 1024, 4096});
    ASSERT_TRUE(client.ok()) << client.status().message();
    // Writers wait for free chunks as long as it takes (a loaded machine, a
    // sanitizer): every packet a test writes must arrive.
    ArbiterOptions patient;
    patient.stall_timeout_ms = kWaitMs;
    producer->Attach(std::move(client.value()), patient);
    DataSourceDescriptor d;
    d.name = ds;
    d.will_notify_on_stop = true;
    producer->connection()->RegisterDataSource(d);
  }
  std::unique_ptr<ConsumerIpcClient> ConnectConsumer() {
    auto c = ConsumerIpcClient::Connect(consumer_socket());
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? std::move(c.value()) : nullptr;
  }
  static perfetto::protos::TraceConfig Config(uint32_t buffer_kb, const std::string& ds) {
    auto config = testing::MakeConfig(buffer_kb, ds);
    config.set_flush_timeout_ms(500);
    config.set_data_source_stop_timeout_ms(500);
    return config;
  }
  static TraceContents StopAndExamine(ConsumerEndpoint* consumer) {
    EXPECT_TRUE(consumer->DisableTracing().ok());
    std::string error;
    EXPECT_TRUE(consumer->WaitForTracingDisabled(kWaitMs, &error));
    EXPECT_EQ(error, "");
    return Examine(testing::ReadAllPackets(consumer));
  }
  // Writes packets seq [begin, end) tagged `tag` and commits them.
  static void WritePackets(TestProducer* producer, uint32_t target_buffer, uint32_t tag,
                           uint32_t begin, uint32_t end) {
    auto writer = producer->arbiter()->CreateTraceWriter(target_buffer, BufferExhaustedPolicy::kStall);
    for (uint32_t i = begin; i < end; i++) testing::WriteTestPacket(writer.get(), {tag, 0, i});
    writer->Flush();
  }

  std::string dir_;
  std::mutex log_mu_;
  std::string log_;
  std::unique_ptr<EventLoopThread> loop_thread_;
  std::unique_ptr<TracingService> service_;
  std::unique_ptr<IpcServer> server_;
};

// Fault: a producer reads its StartDataSource, commits one chunk, leaves a
// second chunk half written, and from then on reads nothing from its socket.
// What it costs: the flush the consumer asks for fails (flushes_failed 1);
// the service drops the producer at that flush's timeout because it had not
// even read the Flush request (producers_disconnected_not_reading 1); its
// half-written chunk is lost: the 3 packets in it, counted as one chunk in
// chunks_lost_being_written. Everything else is in the trace: the mute
// producer's committed chunk and every packet of the other producer, before
// and after the drop; the final flush succeeds (the mute one is gone).
TEST_F(TracingServiceFaultTest, ProducerThatStopsReadingIsDroppedAtTheFlushTimeout) {
  auto consumer = ConnectConsumer();
  ASSERT_TRUE(consumer);
  ASSERT_TRUE(consumer->EnableTracing(Config(4096, "test.ds")).ok());
  TestProducer good;
  ConnectOverIpc(&good, "good", "test.ds");
  TestProducer::Started started;
  ASSERT_TRUE(good.WaitForStart(&started, kWaitMs));
  const uint32_t target = started.config.target_buffer();

  MuteProducer mute;
  ASSERT_TRUE(mute.Connect(producer_socket(), "test.ds"));
  ASSERT_EQ(mute.WaitForStart(), target);
  {
    // One full chunk (committed) and 3 packets of the next, left
    // BeingWritten: the writer is never flushed nor destroyed before the
    // producer is gone.
    auto writer = mute.arbiter()->CreateTraceWriter(target, BufferExhaustedPolicy::kDrop);
    for (uint32_t i = 0; i < testing::kTestPacketsPerChunk + 3; i++)
      testing::WriteTestPacket(writer.get(), {2, 0, i});
    mute.arbiter()->FlushPendingCommitData();
    // The commit is in; from here on the mute producer reads nothing.
    ASSERT_TRUE(WaitUntil([&] { return service_->GetServiceStats().chunks_moved >= 1; }));

    WritePackets(&good, target, 1, 0, 100);
    auto flushed = consumer->Flush();
    ASSERT_TRUE(flushed.ok()) << flushed.status().message();
    EXPECT_FALSE(flushed.value()) << "the mute producer cannot answer";
    ASSERT_TRUE(WaitUntil([&] { return service_->GetServiceStats().producers_connected == 1; }));
    EXPECT_TRUE(mute.client()->WaitForEof()) << "the service closed the mute producer's socket";
    WritePackets(&good, target, 1, 100, 200);
    TraceContents trace = StopAndExamine(consumer.get());

    EXPECT_EQ(trace.Seq(1, 0), Range(0, 200)) << "the good producer lost nothing";
    EXPECT_EQ(trace.Seq(2, 0), Range(0, testing::kTestPacketsPerChunk))
        << "the mute producer's committed chunk is there, its half-written one is not";
    ASSERT_EQ(trace.stats_packets, 1);
    const auto& faults = trace.stats.sluice_service_stats();
    EXPECT_EQ(faults.producers_disconnected(), 1u);
    EXPECT_EQ(faults.producers_disconnected_not_reading(), 1u);
    EXPECT_EQ(faults.producers_disconnected_for_faults(), 0u);
    EXPECT_EQ(faults.chunks_lost_being_written(), 1u);
    EXPECT_EQ(trace.stats.flushes_failed(), 1u);
    EXPECT_EQ(trace.stats.final_flush_outcome(), TraceStats::FINAL_FLUSH_SUCCEEDED);
    EXPECT_EQ(trace.Row("producers_disconnected_not_reading"), 1);
    EXPECT_EQ(trace.Row("chunks_lost_being_written"), 1);
    EXPECT_EQ(trace.Row("traced_flushes_failed"), 1);
  }
  EXPECT_EQ(service_->GetServiceStats().producers_disconnected_not_reading, 1u);
  EXPECT_NE(log().find("'mute' (pid " + std::to_string(getpid()) + ") does not read its socket"),
            std::string::npos)
      << log();
  good.Detach();
}

// Fault: a producer's receive thread blocks inside its Flush callback, so it
// reads the first Flush request and then nothing more. What it costs: the
// first flush fails but the producer stays (it read the request: a slow
// producer is not dropped for one missed flush); at the second flush's
// timeout the request is still unread and the producer is dropped
// (producers_disconnected_not_reading 1). It had committed all it wrote,
// so no packet of it is lost (chunks_lost_being_written 0); the trace says
// two flushes failed and which producer fault happened.
TEST_F(TracingServiceFaultTest, ProducerStuckInACallbackIsDroppedAtTheNextFlush) {
  auto consumer = ConnectConsumer();
  ASSERT_TRUE(consumer);
  ASSERT_TRUE(consumer->EnableTracing(Config(4096, "test.ds")).ok());
  StuckProducer stuck;
  ConnectOverIpc(&stuck, "stuck", "test.ds");
  TestProducer::Started started;
  ASSERT_TRUE(stuck.WaitForStart(&started, kWaitMs));
  WritePackets(&stuck, started.config.target_buffer(), 3, 0, 50);

  auto first = consumer->Flush();
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first.value());
  ASSERT_TRUE(stuck.WaitUntilStuck());
  EXPECT_EQ(service_->GetServiceStats().producers_connected, 1u) << "read the Flush: still here";
  EXPECT_EQ(service_->GetServiceStats().producers_disconnected_not_reading, 0u);
  auto second = consumer->Flush();
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second.value());
  ASSERT_TRUE(WaitUntil([&] { return service_->GetServiceStats().producers_connected == 0; }));
  TraceContents trace = StopAndExamine(consumer.get());
  stuck.Release();

  EXPECT_EQ(trace.Seq(3, 0), Range(0, 50));
  const auto& faults = trace.stats.sluice_service_stats();
  EXPECT_EQ(faults.producers_disconnected_not_reading(), 1u);
  EXPECT_EQ(faults.chunks_lost_being_written(), 0u);
  EXPECT_EQ(trace.stats.flushes_failed(), 2u);
  EXPECT_EQ(trace.Row("producers_disconnected_not_reading"), 1);
  stuck.Detach();
}

// Fault: a producer stalls with chunks BeingWritten: it answers no flush
// and acknowledges no stop, while another producer works normally. It has
// two writers: A (registered with the service) filled 3 chunks and 3
// packets of a 4th; B (created after the producer's last commit, so not
// registered yet) filled 1 chunk and 1 packet of a 2nd. None of it was
// committed. What it costs: the session still ends, after the flush timeout
// and the stop timeout instead of at once (final_flush_outcome FAILED,
// flushes_failed 1). A's 3 Complete chunks are recovered from the shared
// memory (chunks_scraped 3); lost are A's and B's half-written chunks
// (chunks_lost_being_written 2: 3 + 1 packets) and B's Complete chunk,
// whose buffer the service cannot know (chunks_lost_writer_unknown 1: 8
// packets). The working producer's packets are all there, and the service
// takes a new session afterwards.
TEST_F(TracingServiceFaultTest, StalledProducerWithChunksBeingWrittenDoesNotHoldTheSession) {
  auto consumer = ConnectConsumer();
  ASSERT_TRUE(consumer);
  ASSERT_TRUE(consumer->EnableTracing(Config(4096, "test.ds")).ok());
  TestProducer good, stalled;
  ConnectOverIpc(&good, "good", "test.ds");
  ConnectOverIpc(&stalled, "stalled", "test.ds");
  stalled.set_answer_flushes(false);
  stalled.set_ack_stops(false);
  TestProducer::Started good_start, stalled_start;
  ASSERT_TRUE(good.WaitForStart(&good_start, kWaitMs));
  ASSERT_TRUE(stalled.WaitForStart(&stalled_start, kWaitMs));

  // The writers live until after the session ended, so their last chunks
  // stay BeingWritten; the Complete ones wait in the arbiter's commit batch
  // (never sent: the producer is stalled).
  const uint32_t target = stalled_start.config.target_buffer();
  auto writer_a = stalled.arbiter()->CreateTraceWriter(target, BufferExhaustedPolicy::kDrop);
  stalled.arbiter()->FlushPendingCommitData();  // A's registration only.
  for (uint32_t i = 0; i < 3 * testing::kTestPacketsPerChunk + 3; i++)
    testing::WriteTestPacket(writer_a.get(), {5, 0, i});
  auto writer_b = stalled.arbiter()->CreateTraceWriter(target, BufferExhaustedPolicy::kDrop);
  for (uint32_t i = 0; i < testing::kTestPacketsPerChunk + 1; i++)
    testing::WriteTestPacket(writer_b.get(), {5, 1, i});
  WritePackets(&good, good_start.config.target_buffer(), 4, 0, 500);

  TraceContents trace = StopAndExamine(consumer.get());
  EXPECT_EQ(trace.Seq(4, 0), Range(0, 500));
  EXPECT_EQ(trace.Seq(5, 0), Range(0, 3 * testing::kTestPacketsPerChunk))
      << "A's Complete chunks are recovered, its half-written one is lost";
  EXPECT_TRUE(trace.Seq(5, 1).empty()) << "nothing of B";
  const auto& faults = trace.stats.sluice_service_stats();
  EXPECT_EQ(faults.chunks_scraped(), 3u);
  EXPECT_EQ(faults.chunks_lost_being_written(), 2u);
  EXPECT_EQ(faults.chunks_lost_writer_unknown(), 1u);
  EXPECT_EQ(faults.producers_disconnected(), 0u);
  EXPECT_EQ(trace.stats.final_flush_outcome(), TraceStats::FINAL_FLUSH_FAILED);
  EXPECT_EQ(trace.stats.flushes_failed(), 1u);
  EXPECT_EQ(trace.Row("chunks_lost_being_written"), 2);
  EXPECT_EQ(trace.Row("chunks_lost_writer_unknown"), 1);
  EXPECT_EQ(trace.Row("traced_final_flush_failed"), 1);
  EXPECT_EQ(service_->GetServiceStats().producers_disconnected_not_reading, 0u)
      << "it reads its socket: slow, not dropped";

  // The service is free: a new session runs with both producers connected.
  ASSERT_TRUE(consumer->FreeBuffers().ok());
  ASSERT_TRUE(consumer->EnableTracing(Config(1024, "test.ds")).ok());
  writer_a.reset();
  writer_b.reset();
  good.Detach();
  stalled.Detach();
}

// Two sessions for the consumer tests: B, of a well-behaved consumer
// (ConsumerIpcClient) with producer "b", and A, of a consumer on a raw
// socket with producer "a", which holds kPacketsA packets (about 8 MiB) and
// has been asked for ReadBuffers.
constexpr uint32_t kPacketsA = (8u << 20) / testing::kTestPacketBytes;
constexpr uint64_t kReadRequestId = 2;

struct TwoSessions {
  TestProducer producer_a, producer_b;
  TestProducer::Started a_start, b_start;
  std::unique_ptr<ConsumerIpcClient> consumer_b;
  RawClient consumer_a;
  ~TwoSessions() {
    producer_a.Detach();
    producer_b.Detach();
  }
};

class TracingServiceConsumerFaultTest : public TracingServiceFaultTest {
 protected:
  void StartSessionB(TwoSessions* t) {
    ConnectOverIpc(&t->producer_a, "a", "a.ds");
    ConnectOverIpc(&t->producer_b, "b", "b.ds");
    t->consumer_b = ConnectConsumer();
    ASSERT_TRUE(t->consumer_b);
    ASSERT_TRUE(t->consumer_b->EnableTracing(Config(4096, "b.ds")).ok());
    ASSERT_TRUE(t->producer_b.WaitForStart(&t->b_start, kWaitMs));
  }
  void StartSessionAAndAskToRead(TwoSessions* t) {
    ASSERT_TRUE(t->consumer_a.Connect(consumer_socket()));
    protos::ConsumerToService enable;
    enable.set_request_id(1);
    *enable.mutable_enable_tracing()->mutable_trace_config() = Config(16 * 1024, "a.ds");
    ASSERT_TRUE(t->consumer_a.Send(enable));
    protos::ServiceToConsumer reply;
    ASSERT_TRUE(t->consumer_a.ReadAnswer(&reply));
    ASSERT_EQ(reply.request_id(), 1u);
    ASSERT_EQ(reply.error(), "");
    ASSERT_TRUE(t->producer_a.WaitForStart(&t->a_start, kWaitMs));
    WritePackets(&t->producer_a, t->a_start.config.target_buffer(), 10, 0, kPacketsA);
    ASSERT_TRUE(WaitUntil([&] {
      return service_->GetServiceStats().chunks_moved >= kPacketsA / testing::kTestPacketsPerChunk;
    }));
    protos::ConsumerToService read;
    read.set_request_id(kReadRequestId);
    read.mutable_read_buffers();
    ASSERT_TRUE(t->consumer_a.Send(read));
  }
};

// Fault: a consumer asks for ReadBuffers on a session holding about 8 MiB,
// takes the first answer frame and closes its socket. What it costs: that
// consumer's session and its unread data, as for any consumer that goes
// away (the session belongs to the connection: closing it frees the session
// and its buffers, like FreeBuffers). Nothing else: the other consumer's
// session goes on and reads every packet of its producer, a new consumer
// starts a session, and no file descriptor is left behind.
TEST_F(TracingServiceConsumerFaultTest, ConsumerThatDisconnectsMidReadBuffersLeavesTheServiceHealthy) {
  TwoSessions t;
  ASSERT_NO_FATAL_FAILURE(StartSessionB(&t));
  const size_t fds_before = OpenFdCount();
  ASSERT_NO_FATAL_FAILURE(StartSessionAAndAskToRead(&t));
  WritePackets(&t.producer_b, t.b_start.config.target_buffer(), 11, 0, 1000);
  protos::ServiceToConsumer reply;
  ASSERT_TRUE(t.consumer_a.ReadAnswer(&reply));
  EXPECT_EQ(reply.request_id(), kReadRequestId);
  EXPECT_GT(reply.read_buffers().slices_size(), 0);
  EXPECT_FALSE(reply.read_buffers().last()) << "8 MiB do not fit one frame";
  t.consumer_a.Close();

  // The session of the consumer that left is gone; the other one runs.
  ASSERT_TRUE(WaitUntil([&] {
    auto state = t.consumer_b->QueryServiceState();
    return state.ok() && state->num_sessions == 1;
  }));
  EXPECT_EQ(service_->GetServiceStats().consumers_connected, 1u);
  WritePackets(&t.producer_b, t.b_start.config.target_buffer(), 11, 1000, 2000);
  TraceContents trace = StopAndExamine(t.consumer_b.get());
  EXPECT_EQ(trace.Seq(11, 0), Range(0, 2000));
  EXPECT_TRUE(trace.Seq(10, 0).empty()) << "sessions are isolated";
  EXPECT_EQ(trace.health.data_loss_total(), 0u) << FormatHealthTable(trace.health);
  EXPECT_EQ(OpenFdCount(), fds_before) << "the consumer's socket and output are all closed";

  // A new consumer gets a session of its own.
  auto consumer_c = ConnectConsumer();
  ASSERT_TRUE(consumer_c);
  ASSERT_TRUE(consumer_c->EnableTracing(Config(1024, "a.ds")).ok());
  auto state = consumer_c->QueryServiceState();
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->num_sessions, 2u);
}

// Fault: a consumer asks for ReadBuffers on a session holding about 8 MiB and
// then reads nothing for a while. What it costs: nothing. The service
// produces the answer as the consumer takes it (a few MiB ahead at most), so
// meanwhile it serves the producers and the other consumer, whose session
// runs, stops and reads completely; when the slow consumer reads again, it
// gets its whole answer, every packet once, in order.
TEST_F(TracingServiceConsumerFaultTest, ConsumerThatStopsReadingMidReadBuffersDoesNotHoldTheService) {
  TwoSessions t;
  ASSERT_NO_FATAL_FAILURE(StartSessionB(&t));
  ASSERT_NO_FATAL_FAILURE(StartSessionAAndAskToRead(&t));

  // Consumer A reads nothing now; B's session runs its whole course.
  WritePackets(&t.producer_b, t.b_start.config.target_buffer(), 11, 0, 1000);
  TraceContents trace_b = StopAndExamine(t.consumer_b.get());
  EXPECT_EQ(trace_b.Seq(11, 0), Range(0, 1000));

  // A reads its answer now: all of it.
  std::vector<uint32_t> seqs;
  std::string partial;
  bool last = false;
  while (!last) {
    protos::ServiceToConsumer reply;
    ASSERT_TRUE(t.consumer_a.ReadAnswer(&reply));
    if (reply.request_id() != kReadRequestId) continue;  // A notification.
    ASSERT_EQ(reply.error(), "");
    for (const auto& slice : reply.read_buffers().slices()) {
      partial.append(slice.data());
      if (!slice.last_slice_for_packet()) continue;
      TracePacket p;
      TestPacketId id;
      if (p.ParseFromString(partial) && testing::ParseTestPacket(p, &id)) seqs.push_back(id.seq);
      partial.clear();
    }
    last = reply.read_buffers().last();
  }
  EXPECT_EQ(seqs, Range(0, kPacketsA));
}

}  // namespace
}  // namespace sluice
