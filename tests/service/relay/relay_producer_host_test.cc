// The relay end to end in one process: a host TracingService with its
// RelayServer on a unix socket, a guest RelayProducerHost taking producers
// on its own socket, and a producer that connects to the guest's socket over
// sluice's IPC, as sluice-probes in a guest does.
#include "service/relay/relay_producer_host.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "gtest/gtest.h"
#include "perfetto/common/trace_stats.pb.h"
#include "service/event_loop.h"
#include "service/ipc/ipc_server.h"
#include "service/ipc/producer_ipc_client.h"
#include "service/relay/relay_server.h"
#include "service/tracing_service.h"
#include "sluice/service_stats.pb.h"
#include "tests/service/service_test_util.h"

namespace sluice {
namespace {

using perfetto::protos::TracePacket;
using testing::TestPacketId;
using testing::TestProducer;

class RelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/sluice-relay-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    host_ = std::make_unique<TracingService>(host_loop_.loop());
    auto addr = ParseRelayAddress(dir_ + "/relay.sock");
    ASSERT_TRUE(addr.ok());
    auto server = RelayServer::Create(host_.get(), *addr, ListenOptions{});
    ASSERT_TRUE(server.ok()) << server.status().message();
    relay_server_ = std::move(server.value());
  }

  void TearDown() override {
    StopGuest();
    relay_server_.reset();
    host_.reset();
    // The listening sockets stay as files (the daemons unlink theirs at exit).
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // Starts the guest's relay (and its producer socket), waits until the
  // host welcomed it and its clocks are synced.
  void StartGuest(RelayOptions options = {}, bool via_proxy = false) {
    if (!via_proxy) options.to = *ParseRelayAddress(dir_ + "/relay.sock");
    if (options.machine_name.empty()) options.machine_name = "guest1";
    guest_loop_ = std::make_unique<EventLoopThread>();
    relay_ = std::make_unique<RelayProducerHost>(guest_loop_->loop(), options);
    IpcServerOptions ipc;
    ipc.producer_socket_path = dir_ + "/guest-producer.sock";
    ipc.consumer_socket_path.clear();
    auto server = IpcServer::CreateForProducers(relay_.get(), ipc);
    ASSERT_TRUE(server.ok()) << server.status().message();
    guest_server_ = std::move(server.value());
    guest_loop_->loop()->PostTask([this] { relay_->Start(); });
    ASSERT_TRUE(testing::WaitUntil([this] {
      bool announced = false;
      guest_loop_->loop()->RunAndWait([&] { announced = relay_->announced(); });
      return announced;
    }));
  }

  void StopGuest() {
    producer_client_.reset();
    guest_server_.reset();
    if (guest_loop_) guest_loop_->loop()->RunAndWait([this] { relay_.reset(); });
    guest_loop_.reset();
    unlink((dir_ + "/guest-producer.sock").c_str());
  }

  // A producer in the guest, connected through the relay's socket.
  void ConnectGuestProducer(TestProducer* producer) {
    auto client = ProducerIpcClient::Connect(dir_ + "/guest-producer.sock", producer,
                                             ProducerOptions{"guest-probes", 8u << 20, 4096});
    ASSERT_TRUE(client.ok()) << client.status().message();
    producer->Attach(std::move(client.value()));
    DataSourceDescriptor d;
    d.name = "test.ds";
    d.will_notify_on_stop = true;
    producer->connection()->RegisterDataSource(d);
  }

  // A session with room for everything a slow link lets through, and flushes
  // that may wait for it (30 s); waits until `producer`'s data source started.
  void StartSlowLinkSession(TestProducer* producer, std::unique_ptr<ConsumerEndpoint>* consumer,
                            TestProducer::Started* started) {
    *consumer = host_->ConnectConsumer();
    auto config = testing::MakeConfig(8192, "test.ds");
    config.set_flush_timeout_ms(30000);
    ASSERT_TRUE((*consumer)->EnableTracing(config).ok());
    ASSERT_TRUE(producer->WaitForStart(started));
  }

  // `count` test packets on one new writer of `producer`, numbered from 0,
  // as writer `writer_id` (TestPacketId.writer), then flushed.
  static void WriteTestPackets(TestProducer* producer, const TestProducer::Started& started,
                               uint32_t writer_id, uint32_t count) {
    auto writer = producer->arbiter()->CreateTraceWriter(started.config.target_buffer());
    for (uint32_t seq = 0; seq < count; seq++) testing::WriteTestPacket(writer.get(), {1, writer_id, seq});
    writer->Flush();
  }

  RelayProducerHost::Totals GuestTotals() {
    RelayProducerHost::Totals t;
    guest_loop_->loop()->RunAndWait([&] { t = relay_->totals(); });
    return t;
  }

  std::string dir_;
  EventLoopThread host_loop_;
  std::unique_ptr<TracingService> host_;
  std::unique_ptr<RelayServer> relay_server_;
  std::unique_ptr<EventLoopThread> guest_loop_;
  std::unique_ptr<RelayProducerHost> relay_;
  std::unique_ptr<IpcServer> guest_server_;
  std::unique_ptr<ProducerEndpoint> producer_client_;
};

struct Seen {
  std::map<uint32_t, std::vector<uint32_t>> seqs;  // writer -> seq numbers
  std::set<uint32_t> test_packet_machines;
  int clock_syncs_before_data = 0;
  int clock_syncs = 0;
  int machine_stats_packets = 0;
  perfetto::protos::TraceStats stats;  // The host's (machine_id 0).
};

Seen Summarize(const std::vector<TracePacket>& packets) {
  Seen s;
  bool data = false;
  for (const TracePacket& p : packets) {
    if (p.has_remote_clock_sync()) {
      s.clock_syncs++;
      if (!data) s.clock_syncs_before_data++;
      EXPECT_EQ(p.machine_id(), 1u);
    }
    if (p.has_trace_stats()) {
      if (p.machine_id() == 0) s.stats = p.trace_stats();
      else s.machine_stats_packets++;
    }
    TestPacketId id;
    if (testing::ParseTestPacket(p, &id)) {
      data = true;
      s.seqs[id.writer].push_back(id.seq);
      s.test_packet_machines.insert(p.machine_id());
    }
  }
  return s;
}

TEST_F(RelayTest, GuestPacketsReachTheHostOnceEachWithTheirMachineAndClocks) {
  ASSERT_NO_FATAL_FAILURE(StartGuest());
  TestProducer producer;
  ASSERT_NO_FATAL_FAILURE(ConnectGuestProducer(&producer));
  auto consumer = host_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(testing::MakeConfig(4096, "test.ds")).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  constexpr uint32_t kWriters = 2, kPackets = 3000;
  {
    std::vector<std::unique_ptr<TraceWriter>> writers;
    for (uint32_t w = 0; w < kWriters; w++)
      writers.push_back(producer.arbiter()->CreateTraceWriter(started.config.target_buffer()));
    for (uint32_t seq = 0; seq < kPackets; seq++)
      for (uint32_t w = 0; w < kWriters; w++) testing::WriteTestPacket(writers[w].get(), {1, w, seq});
    for (auto& w : writers) w->Flush();
  }
  ASSERT_TRUE(consumer->DisableTracing().ok());
  std::string error;
  ASSERT_TRUE(consumer->WaitForTracingDisabled(20000, &error));
  EXPECT_EQ(error, "");
  Seen s = Summarize(testing::ReadAllPackets(consumer.get()));
  for (uint32_t w = 0; w < kWriters; w++) {
    EXPECT_EQ(s.seqs[w].size(), kPackets) << w;
    EXPECT_EQ(s.seqs[w], testing::SeqRange(0, kPackets)) << w;
  }
  EXPECT_EQ(s.test_packet_machines, std::set<uint32_t>{1});
  EXPECT_GE(s.clock_syncs_before_data, 1);
  ASSERT_EQ(s.stats.sluice_service_stats().relay_machines_size(), 1);
  const auto& m = s.stats.sluice_service_stats().relay_machines(0);
  EXPECT_EQ(m.machine_id(), 1u);
  EXPECT_EQ(m.machine_name(), "guest1");
  EXPECT_EQ(m.connects(), 1u);
  EXPECT_EQ(m.chunks_dropped(), 0u);
  EXPECT_GE(m.clock_syncs(), 1u);
  // Both ends run on this machine's clocks: the offset is 0 within its bound.
  EXPECT_LE(static_cast<uint64_t>(std::llabs(m.clock_offset_ns())), m.clock_error_ns());
  EXPECT_EQ(s.machine_stats_packets, 1);
  producer.Detach();
}

TEST_F(RelayTest, OverTcpOnLoopback) {
  // A second server of the same host on TCP (containers, another machine).
  std::unique_ptr<RelayServer> tcp_server;
  RelayAddress tcp;
  for (uint32_t port = 17000 + static_cast<uint32_t>(getpid() % 2000); port < 65000 && !tcp_server;
       port += 97) {
    auto addr = ParseRelayAddress("tcp:127.0.0.1:" + std::to_string(port));
    ASSERT_TRUE(addr.ok());
    auto server = RelayServer::Create(host_.get(), *addr, ListenOptions{});
    if (server.ok()) {
      tcp_server = std::move(server.value());
      tcp = *addr;
    }
  }
  ASSERT_TRUE(tcp_server);
  RelayOptions options;
  options.to = tcp;
  ASSERT_NO_FATAL_FAILURE(StartGuest(options, /*via_proxy=*/true));
  TestProducer producer;
  ASSERT_NO_FATAL_FAILURE(ConnectGuestProducer(&producer));
  auto consumer = host_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(testing::MakeConfig(4096, "test.ds")).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  WriteTestPackets(&producer, started, 0, 500);
  ASSERT_TRUE(consumer->DisableTracing().ok());
  ASSERT_TRUE(consumer->WaitForTracingDisabled(20000));
  Seen s = Summarize(testing::ReadAllPackets(consumer.get()));
  EXPECT_EQ(s.seqs[0], testing::SeqRange(0, 500));
  EXPECT_EQ(s.test_packet_machines, std::set<uint32_t>{1});
  producer.Detach();
  StopGuest();
  host_loop_.loop()->RunAndWait([&] { tcp_server.reset(); });
}

TEST_F(RelayTest, ASlowLinkDropsWholeChunksAndTheTraceCountsEachOne) {
  RelayOptions options;
  options.buffer_bytes = 64u << 10;
  options.max_bytes_per_second = 64u << 10;
  ASSERT_NO_FATAL_FAILURE(StartGuest(options));
  TestProducer producer;
  ASSERT_NO_FATAL_FAILURE(ConnectGuestProducer(&producer));
  std::unique_ptr<ConsumerEndpoint> consumer;
  TestProducer::Started started;
  ASSERT_NO_FATAL_FAILURE(StartSlowLinkSession(&producer, &consumer, &started));
  // 4000 packets of 505 bytes: 2 MB through a 64 KiB/s link with 64 KiB of
  // queue. Each chunk holds 8 whole packets (service_test_util.h).
  constexpr uint32_t kPackets = 4000;
  // Made first, so that it keeps its own writer id (a writer's id is free
  // again once the writer is gone).
  auto writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer());
  WriteTestPackets(&producer, started, 0, kPackets);
  // The flush answer comes after the relay's loss counts (same link, in order).
  auto flushed = consumer->Flush(30000);
  ASSERT_TRUE(flushed.ok());
  // Then a few more on another writer that wrote a burst first: the burst's
  // tail was dropped, these come after that gap (the flush answer came
  // after everything queued, so the link has room for them).
  constexpr uint32_t kBurst = 1000, kAfter = 16;
  for (uint32_t seq = 0; seq < kBurst; seq++) testing::WriteTestPacket(writer.get(), {1, 1, seq});
  writer->Flush();
  ASSERT_TRUE(consumer->Flush(30000).ok());
  for (uint32_t seq = kBurst; seq < kBurst + kAfter; seq++) testing::WriteTestPacket(writer.get(), {1, 1, seq});
  writer->Flush();
  writer.reset();
  ASSERT_TRUE(consumer->Flush(30000).ok());
  // Read while the session runs: the commits named the chunks they dropped,
  // so no packet waits behind a gap for the session's end.
  std::vector<TracePacket> packets = testing::ReadAllPackets(consumer.get());
  const Seen mid = Summarize(packets);
  ASSERT_FALSE(mid.seqs.count(1) == 0 || mid.seqs.at(1).empty());
  EXPECT_EQ(mid.seqs.at(1).back(), kBurst + kAfter - 1) << "packets were held behind a dropped chunk";
  const size_t before_end = mid.seqs.at(0).size() + mid.seqs.at(1).size();
  ASSERT_TRUE(consumer->DisableTracing().ok());
  ASSERT_TRUE(consumer->WaitForTracingDisabled(60000));
  for (TracePacket& p : testing::ReadAllPackets(consumer.get())) packets.push_back(std::move(p));
  Seen s = Summarize(packets);
  EXPECT_EQ(before_end, s.seqs[0].size() + s.seqs[1].size()) << "packets were held until the end";
  const auto& m = s.stats.sluice_service_stats().relay_machines(0);
  RelayProducerHost::Totals t = GuestTotals();
  EXPECT_GT(t.chunks_dropped, 0u);
  EXPECT_EQ(m.chunks_dropped(), t.chunks_dropped);
  EXPECT_EQ(m.packets_dropped(), t.packets_dropped);
  EXPECT_EQ(m.bytes_dropped(), t.bytes_dropped);
  ASSERT_EQ(m.chunks_dropped_per_buffer_size(), 1);
  EXPECT_EQ(m.chunks_dropped_per_buffer(0), t.chunks_dropped);
  // Every packet is either in the trace or counted as dropped.
  const std::vector<uint32_t>& got = s.seqs[0];
  EXPECT_EQ(got.size() + s.seqs[1].size() + m.packets_dropped(), kPackets + kBurst + kAfter);
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
  EXPECT_TRUE(std::is_sorted(s.seqs[1].begin(), s.seqs[1].end()));
  producer.Detach();
}

TEST_F(RelayTest, AGuestThatGoesAwayLeavesTheSessionRunningAndComesBackAsTheSameMachine) {
  ASSERT_NO_FATAL_FAILURE(StartGuest());
  auto consumer = host_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(testing::MakeConfig(4096, "test.ds")).ok());
  for (uint32_t round = 0; round < 2; round++) {
    TestProducer producer;
    ASSERT_NO_FATAL_FAILURE(ConnectGuestProducer(&producer));
    TestProducer::Started started;
    ASSERT_TRUE(producer.WaitForStart(&started));
    WriteTestPackets(&producer, started, round, 100);
    ASSERT_TRUE(consumer->Flush(10000).ok());
    producer.Detach();
    StopGuest();  // The relay dies with its link: the session goes on.
    ASSERT_TRUE(testing::WaitUntil([this] {  // Once the host saw the link end.
      size_t links = 1;
      host_loop_.loop()->RunAndWait([&] { links = relay_server_->num_links(); });
      return links == 0;
    }));
    if (round == 0) {
      ASSERT_NO_FATAL_FAILURE(StartGuest());
    }
  }
  ASSERT_TRUE(consumer->DisableTracing().ok());
  ASSERT_TRUE(consumer->WaitForTracingDisabled(20000));
  Seen s = Summarize(testing::ReadAllPackets(consumer.get()));
  EXPECT_EQ(s.seqs[0], testing::SeqRange(0, 100));
  EXPECT_EQ(s.seqs[1], testing::SeqRange(0, 100));
  EXPECT_EQ(s.test_packet_machines, std::set<uint32_t>{1});  // The same machine both times.
  ASSERT_EQ(s.stats.sluice_service_stats().relay_machines_size(), 1);
  EXPECT_EQ(s.stats.sluice_service_stats().relay_machines(0).connects(), 2u);
  EXPECT_EQ(s.stats.sluice_service_stats().relay_machines(0).disconnects(), 2u);
}

// A unix socket between the guest's relay and the host that the test can
// cut, as a broken cable or a QEMU chardev that lost its peer: what it holds
// in flight is lost, and the relay connects again through it.
class CuttableProxy {
 public:
  CuttableProxy(std::string listen_path, std::string target_path)
      : target_(std::move(target_path)) {
    auto fd = ListenUnixSocket(listen_path, ListenOptions{});
    EXPECT_TRUE(fd.ok());
    if (fd.ok()) listen_ = std::move(fd.value());
    thread_ = std::thread([this] { Run(); });
  }
  ~CuttableProxy() {
    stop_ = true;
    thread_.join();
  }
  void Cut() { cut_ = true; }
  bool cut_done() const { return cuts_done_ > 0; }

 private:
  void Run() {
    ScopedFd a, b;  // relay side, host side
    while (!stop_) {
      if (cut_.exchange(false)) {
        a.reset();
        b.reset();
        cuts_done_++;
      }
      if (!a.valid()) {
        a = AcceptUnixSocket(listen_.get());
        if (a.valid()) {
          auto c = ConnectUnixSocket(target_, /*nonblocking=*/true);
          if (c.ok()) b = std::move(c.value());
          else a.reset();
        }
      }
      pollfd fds[3] = {{listen_.get(), POLLIN, 0}, {a.get(), POLLIN, 0}, {b.get(), POLLIN, 0}};
      poll(fds, 3, 5);
      char buf[4096];
      for (auto [from, to] : {std::pair<int, int>{a.get(), b.get()}, {b.get(), a.get()}}) {
        if (from < 0 || to < 0) continue;
        ssize_t n = read(from, buf, sizeof(buf));
        if (n == 0) {
          a.reset();
          b.reset();
          break;
        }
        // Small bursts: the test's link is slow, nothing waits long.
        for (ssize_t off = 0; n > 0 && off < n;) {
          ssize_t w = send(to, buf + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
          if (w > 0) off += w;
          else if (errno != EAGAIN) break;
        }
      }
    }
  }
  ScopedFd listen_;
  std::string target_;
  std::thread thread_;
  std::atomic<bool> stop_{false}, cut_{false};
  std::atomic<int> cuts_done_{0};
};

TEST_F(RelayTest, ALinkCutMidStreamLosesNothingUncounted) {
  CuttableProxy proxy(dir_ + "/proxy.sock", dir_ + "/relay.sock");
  RelayOptions options;
  options.to = *ParseRelayAddress(dir_ + "/proxy.sock");
  options.max_bytes_per_second = 256u << 10;  // Keeps frames in flight when the cut comes.
  options.buffer_bytes = 256u << 10;
  options.reconnect_ms = 20;
  ASSERT_NO_FATAL_FAILURE(StartGuest(options, /*via_proxy=*/true));
  TestProducer producer;
  ASSERT_NO_FATAL_FAILURE(ConnectGuestProducer(&producer));
  std::unique_ptr<ConsumerEndpoint> consumer;
  TestProducer::Started started;
  ASSERT_NO_FATAL_FAILURE(StartSlowLinkSession(&producer, &consumer, &started));
  constexpr uint32_t kPackets = 2000;
  WriteTestPackets(&producer, started, 0, kPackets);
  proxy.Cut();
  ASSERT_TRUE(testing::WaitUntil([&] { return proxy.cut_done(); }));
  // The relay stops what the host started, reconnects, and the host starts
  // the data source again: the link is whole again once it starts.
  TestProducer::Started again;
  ASSERT_TRUE(producer.WaitForStart(&again, 60000));
  ASSERT_TRUE(consumer->Flush(30000).ok());
  ASSERT_TRUE(consumer->DisableTracing().ok());
  ASSERT_TRUE(consumer->WaitForTracingDisabled(60000));
  Seen s = Summarize(testing::ReadAllPackets(consumer.get()));
  ASSERT_EQ(s.stats.sluice_service_stats().relay_machines_size(), 1);
  const auto& m = s.stats.sluice_service_stats().relay_machines(0);
  RelayProducerHost::Totals t = GuestTotals();
  EXPECT_EQ(m.connects(), 2u);
  EXPECT_EQ(m.chunks_dropped(), t.chunks_dropped);
  EXPECT_EQ(m.packets_dropped(), t.packets_dropped);
  // A frame the cut split is the relay's to count (it knows its chunks):
  // the host's provisional count of it was taken back.
  EXPECT_EQ(m.chunks_lost_in_transit(), 0u);
  // Every packet is in the trace or counted as dropped, once.
  EXPECT_EQ(s.seqs[0].size() + m.packets_dropped(), kPackets)
      << "found " << s.seqs[0].size() << ", dropped " << m.packets_dropped();
  producer.Detach();
}

TEST_F(RelayTest, TheHostRefusesAFrameOutOfPlaceAndStaysUp) {
  auto fd = OpenRelayAddress(*ParseRelayAddress(dir_ + "/relay.sock"));
  ASSERT_TRUE(fd.ok());
  // A length prefix far over the bound: the link closes, the server lives.
  const uint8_t huge[4] = {0xff, 0xff, 0xff, 0x7f};
  ASSERT_EQ(write(fd->get(), huge, 4), 4);
  char b;
  ASSERT_TRUE(testing::WaitUntil([&] { return read(fd->get(), &b, 1) == 0; }));
  ASSERT_NO_FATAL_FAILURE(StartGuest());  // Still serves relays.
}

}  // namespace
}  // namespace sluice
