// Tests of service/ipc/ipc_consumer_port.h over a channel without a socket
// whose queue the test drains by hand: a ReadBuffers answer is produced as
// the consumer reads it, never more than kReadAheadBytes ahead, and requests
// that arrive meanwhile are answered after it.
#include "service/ipc/ipc_consumer_port.h"

#include <unistd.h>

#include "gtest/gtest.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "service/tracing_service.h"
#include "sluice/ipc.pb.h"
#include "tests/service/service_test_util.h"

namespace sluice {
namespace {

using testing::TestPacketId;
using testing::TestProducer;

// Frames go into `sent`; they count as queued until Drain().
class PacedChannel : public IpcChannel {
 public:
  PacedChannel() {
    peer_.uid = getuid();
    peer_.pid = getpid();
  }
  void Send(const google::protobuf::MessageLite& envelope, int) override {
    // Notifications (request id 0: the session's data sources all started)
    // come from the service thread while the test reads `sent`; they are not
    // what this channel is for.
    if (static_cast<const protos::ServiceToConsumer&>(envelope).request_id() == 0) return;
    sent.emplace_back();
    sent.back().ParseFromString(envelope.SerializeAsString());
    queued += envelope.ByteSizeLong();
    max_queued = std::max(max_queued, queued);
  }
  size_t queued_output_bytes() const override { return queued; }
  void NotifyWhenOutputAtMost(size_t bytes, std::function<void()> fn) override {
    notify_at_most = bytes;
    on_drained = std::move(fn);
  }
  ScopedFd TakeReceivedFd() override { return ScopedFd(); }
  const PeerCredentials& peer() const override { return peer_; }
  void Close(const std::string&) override { closed = true; }

  // The consumer took everything: runs the pending notification.
  void Drain() {
    queued = 0;
    if (on_drained) std::exchange(on_drained, nullptr)();
  }

  std::vector<protos::ServiceToConsumer> sent;
  size_t queued = 0, max_queued = 0, notify_at_most = 0;
  std::function<void()> on_drained;
  bool closed = false;

 private:
  PeerCredentials peer_;
};

std::string Frame(const protos::ConsumerToService& msg) { return msg.SerializeAsString(); }

TEST(IpcConsumerPortTest, ReadBuffersAnswerIsProducedAsTheConsumerReadsIt) {
  EventLoopThread loop;
  TracingService service(loop.loop());
  PacedChannel channel;
  {
    IpcConsumerPort port(&service, &channel);
    TestProducer producer;
    auto conn = service.ConnectProducer(&producer, ProducerOptions{"p", 4u << 20, 4096});
    ASSERT_TRUE(conn.ok());
    producer.Attach(std::move(conn.value()));
    producer.connection()->RegisterDataSource(DataSourceDescriptor{"test.ds"});

    protos::ConsumerToService enable;
    enable.set_request_id(1);
    *enable.mutable_enable_tracing()->mutable_trace_config() = testing::MakeConfig(16 * 1024, "test.ds");
    port.OnFrame(Frame(enable));
    ASSERT_EQ(channel.sent.size(), 1u);
    ASSERT_EQ(channel.sent[0].error(), "");
    TestProducer::Started started;
    ASSERT_TRUE(producer.WaitForStart(&started, 60000));
    constexpr uint32_t kPackets = (8u << 20) / testing::kTestPacketBytes;
    {
      auto writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer());
      for (uint32_t i = 0; i < kPackets; i++) testing::WriteTestPacket(writer.get(), {1, 0, i});
    }
    channel.Drain();
    channel.sent.clear();

    protos::ConsumerToService read;
    read.set_request_id(2);
    read.mutable_read_buffers();
    port.OnFrame(Frame(read));
    ASSERT_TRUE(channel.on_drained) << "8 MiB are not queued at once";
    EXPECT_EQ(channel.notify_at_most, IpcConsumerPort::kReadResumeBytes);
    // A request during the answer waits for its end.
    protos::ConsumerToService query;
    query.set_request_id(3);
    query.mutable_query_service_state();
    port.OnFrame(Frame(query));

    std::vector<uint32_t> seqs;
    int pauses = 0;
    for (int rounds = 0; rounds < 1000; rounds++) {
      if (!channel.on_drained) break;
      pauses++;
      channel.Drain();
    }
    EXPECT_GE(pauses, 3) << "paused about every 2 MiB";
    EXPECT_LE(channel.max_queued, IpcConsumerPort::kReadAheadBytes + 2 * kReadBuffersSliceBytes);
    ASSERT_GE(channel.sent.size(), 2u);
    std::string partial;
    for (size_t i = 0; i + 1 < channel.sent.size(); i++) {
      const auto& msg = channel.sent[i];
      ASSERT_EQ(msg.request_id(), 2u);
      EXPECT_EQ(msg.read_buffers().last(), i + 2 == channel.sent.size());
      for (const auto& slice : msg.read_buffers().slices()) {
        partial.append(slice.data());
        if (!slice.last_slice_for_packet()) continue;
        perfetto::protos::TracePacket p;
        TestPacketId id;
        if (p.ParseFromString(partial) && testing::ParseTestPacket(p, &id)) seqs.push_back(id.seq);
        partial.clear();
      }
    }
    ASSERT_EQ(seqs.size(), kPackets);
    for (uint32_t i = 0; i < kPackets; i++) ASSERT_EQ(seqs[i], i);
    EXPECT_EQ(channel.sent.back().request_id(), 3u) << "the deferred request, after the answer";
    EXPECT_TRUE(channel.sent.back().has_query_service_state());
    EXPECT_FALSE(channel.closed);
    producer.Detach();
  }
}

}  // namespace
}  // namespace sluice
