// Tests of service/ipc/perfetto_consumer_port.h over a channel without a
// socket: a Perfetto consumer, as upstream's `perfetto` command talks, runs a
// session in a TracingService fed by a test producer, and gets each answer
// in Perfetto's form. The same with upstream's real `perfetto` over sockets
// is in perfetto_interop_kernel_test.cc.
#include "service/ipc/perfetto_consumer_port.h"

#include <unistd.h>

#include <set>

#include "gtest/gtest.h"
#include "perfetto/ipc/consumer_port.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "service/event_loop.h"
#include "service/tracing_service.h"
#include "tests/service/ipc/perfetto_ipc_test_client.h"
#include "tests/service/ipc/recording_channel.h"
#include "tests/service/service_test_util.h"

namespace sluice {
namespace {

namespace pp = perfetto::protos;
using testing::PerfettoIpcTestClient;
using testing::RecordingChannel;

class PerfettoConsumerPortTest : public ::testing::Test {
 protected:
  PerfettoConsumerPortTest()
      : service_(loop_.loop()), port_(std::make_unique<PerfettoConsumerPort>(&service_, &channel_)) {
    auto conn = service_.ConnectProducer(&producer_, ProducerOptions{"test-producer", 1u << 20, 4096});
    EXPECT_TRUE(conn.ok());
    producer_.Attach(std::move(conn.value()));
    producer_.connection()->RegisterDataSource(DataSourceDescriptor{"test.ds"});
    const size_t bind = Deliver(client_.Bind("ConsumerPort"));
    EXPECT_TRUE(client_.TakeBindReply(channel_.frame(bind)));
  }
  ~PerfettoConsumerPortTest() override {
    loop_.loop()->RunAndWait([&] { port_.reset(); });
    producer_.Detach();
  }

  size_t Deliver(const std::string& frame) {
    const size_t first = channel_.num_frames();
    loop_.loop()->RunAndWait([&] { port_->OnFrame(frame); });
    return first;
  }

  // The frames answering request `id` so far.
  std::vector<pp::IPCFrame> Answers(uint64_t id) {
    std::vector<pp::IPCFrame> out;
    for (size_t i = 0; i < channel_.num_frames(); i++)
      if (channel_.frame(i).request_id() == id) out.push_back(channel_.frame(i));
    return out;
  }
  pp::IPCFrame WaitForAnswer(uint64_t id) {
    EXPECT_TRUE(testing::WaitUntil([&] { return !Answers(id).empty(); })) << "no answer to " << id;
    std::vector<pp::IPCFrame> a = Answers(id);
    return a.empty() ? pp::IPCFrame() : a.back();
  }

  // Starts a session of test.ds; returns the EnableTracing call's id.
  // With `output_fd`, the service writes the trace into it (write_into_file,
  // the fd sent with the call, as `perfetto` sends it).
  uint64_t Enable(int output_fd = -1) {
    pp::EnableTracingRequest req;
    *req.mutable_trace_config() = testing::MakeConfig(4096, "test.ds");
    if (output_fd >= 0) {
      req.mutable_trace_config()->set_write_into_file(true);
      channel_.QueueReceivedFd(output_fd);
    }
    uint64_t id = 0;
    Deliver(client_.Invoke("EnableTracing", req, &id));
    EXPECT_TRUE(producer_.WaitForStart(&started_, 60000));
    return id;
  }

  // Writes test packets 0..n-1 into the session and commits them.
  void WritePackets(uint32_t n) {
    auto writer = producer_.arbiter()->CreateTraceWriter(started_.config.target_buffer(),
                                                         BufferExhaustedPolicy::kStall);
    for (uint32_t i = 0; i < n; i++) testing::WriteTestPacket(writer.get(), {1, writer->writer_id(), i});
    writer->Flush();
  }

  EventLoopThread loop_;
  TracingService service_;
  testing::TestProducer producer_;
  testing::TestProducer::Started started_;
  RecordingChannel channel_;
  std::unique_ptr<PerfettoConsumerPort> port_;
  PerfettoIpcTestClient client_;
};

// upstream's `perfetto -c config -o file`: EnableTracing is answered only
// when the session ends (here by DisableTracing); then ReadBuffers streams
// the packets (has_more on all but the last reply).
TEST_F(PerfettoConsumerPortTest, ASessionEndsByAnsweringEnableTracingThenReadsBack) {
  const uint64_t enable = Enable();
  EXPECT_TRUE(Answers(enable).empty()) << "EnableTracing is answered at the end of the session";
  constexpr uint32_t kPackets = 3000;  // Several ReadBuffers replies' worth.
  WritePackets(kPackets);
  uint64_t disable = 0;
  Deliver(client_.Invoke("DisableTracing", pp::DisableTracingRequest(), &disable));
  EXPECT_TRUE(WaitForAnswer(disable).msg_invoke_method_reply().success());
  pp::EnableTracingResponse ended;
  ASSERT_TRUE(PerfettoIpcTestClient::ParseReply(WaitForAnswer(enable), &ended));
  EXPECT_TRUE(ended.disabled());
  EXPECT_EQ(ended.error(), "");

  uint64_t read = 0;
  Deliver(client_.Invoke("ReadBuffers", pp::ReadBuffersRequest(), &read));
  ASSERT_TRUE(testing::WaitUntil([&] {
    std::vector<pp::IPCFrame> a = Answers(read);
    return !a.empty() && !a.back().msg_invoke_method_reply().has_more();
  }));
  std::string packet;
  std::set<uint32_t> seqs;
  std::vector<pp::IPCFrame> replies = Answers(read);
  EXPECT_GT(replies.size(), 1u);
  for (const pp::IPCFrame& f : replies) {
    pp::ReadBuffersResponse r;
    ASSERT_TRUE(PerfettoIpcTestClient::ParseReply(f, &r));
    for (const auto& slice : r.slices()) {
      packet += slice.data();
      if (!slice.last_slice_for_packet()) continue;
      pp::TracePacket p;
      ASSERT_TRUE(p.ParseFromString(packet));
      testing::TestPacketId id;
      if (testing::ParseTestPacket(p, &id)) seqs.insert(id.seq);
      packet.clear();
    }
  }
  EXPECT_EQ(seqs.size(), kPackets);

  uint64_t stats = 0;
  Deliver(client_.Invoke("GetTraceStats", pp::GetTraceStatsRequest(), &stats));
  pp::GetTraceStatsResponse trace_stats;
  ASSERT_TRUE(PerfettoIpcTestClient::ParseReply(WaitForAnswer(stats), &trace_stats));
  EXPECT_EQ(trace_stats.trace_stats().buffer_stats_size(), 1);
}

// `perfetto --background-wait` observes TYPE_ALL_DATA_SOURCES_STARTED and
// returns once it comes: here when the producer acks its start (it said it
// would: will_notify_on_start), not before.
TEST_F(PerfettoConsumerPortTest, AllDataSourcesStartedIsObservedOnceTheStartsAreAcked) {
  DataSourceDescriptor acking{"acking.ds"};
  acking.will_notify_on_start = true;
  producer_.connection()->RegisterDataSource(acking);
  pp::ObserveEventsRequest observe;
  observe.add_events_to_observe(pp::ObservableEvents::TYPE_ALL_DATA_SOURCES_STARTED);
  uint64_t stream = 0;
  Deliver(client_.Invoke("ObserveEvents", observe, &stream));
  pp::EnableTracingRequest req;
  *req.mutable_trace_config() = testing::MakeConfig(1024, "acking.ds");
  Deliver(client_.Invoke("EnableTracing", req));
  ASSERT_TRUE(producer_.WaitForStart(&started_, 60000));
  loop_.loop()->RunAndWait([] {});  // What the start posted has run.
  EXPECT_TRUE(Answers(stream).empty()) << "announced before the producer acked its start";
  producer_.connection()->NotifyDataSourceStarted(started_.id);
  pp::ObserveEventsResponse event;
  ASSERT_TRUE(PerfettoIpcTestClient::ParseReply(WaitForAnswer(stream), &event));
  EXPECT_TRUE(event.events().all_data_sources_started());
  EXPECT_TRUE(WaitForAnswer(stream).msg_invoke_method_reply().has_more());
}

// A session that cannot start ends at once: EnableTracing answered with
// the reason (what `perfetto` prints).
TEST_F(PerfettoConsumerPortTest, ASessionThatCannotStartEndsWithTheReason) {
  pp::EnableTracingRequest req;  // No buffers.
  req.mutable_trace_config()->add_data_sources()->mutable_config()->set_name("test.ds");
  uint64_t id = 0;
  Deliver(client_.Invoke("EnableTracing", req, &id));
  pp::EnableTracingResponse ended;
  ASSERT_TRUE(PerfettoIpcTestClient::ParseReply(WaitForAnswer(id), &ended));
  EXPECT_TRUE(ended.disabled());
  EXPECT_NE(ended.error(), "");
}

// `perfetto --query`: the producers, data sources and sessions of sluiced.
TEST_F(PerfettoConsumerPortTest, QueryServiceStateAndCapabilities) {
  uint64_t id = 0;
  Deliver(client_.Invoke("QueryServiceState", pp::QueryServiceStateRequest(), &id));
  pp::QueryServiceStateResponse r;
  ASSERT_TRUE(PerfettoIpcTestClient::ParseReply(WaitForAnswer(id), &r));
  ASSERT_EQ(r.service_state().producers_size(), 1);
  EXPECT_EQ(r.service_state().producers(0).name(), "test-producer");
  EXPECT_EQ(r.service_state().producers(0).pid(), getpid());
  ASSERT_EQ(r.service_state().data_sources_size(), 1);
  EXPECT_EQ(r.service_state().data_sources(0).ds_descriptor().name(), "test.ds");
  EXPECT_EQ(r.service_state().data_sources(0).producer_id(), r.service_state().producers(0).id());
  EXPECT_EQ(r.service_state().tracing_service_version(), kServiceVersion);
  Deliver(client_.Invoke("QueryCapabilities", pp::QueryCapabilitiesRequest(), &id));
  pp::QueryCapabilitiesResponse caps;
  ASSERT_TRUE(PerfettoIpcTestClient::ParseReply(WaitForAnswer(id), &caps));
  EXPECT_TRUE(caps.capabilities().has_clone_session());
}

// Detach leaves the session running under a key; a second connection
// attaches (getting the config back) and hears of its end through
// EnableTracing(attach_notification_only), as upstream's client asks.
TEST_F(PerfettoConsumerPortTest, DetachThenAttachAndHearTheEnd) {
  // Only a session the service writes into a file can go on alone (as with
  // traced: `perfetto --detach` needs write_into_file).
  FILE* file = tmpfile();
  ASSERT_NE(file, nullptr);
  Enable(fileno(file));
  pp::DetachRequest detach;
  detach.set_key("k");
  uint64_t id = 0;
  Deliver(client_.Invoke("Detach", detach, &id));
  EXPECT_TRUE(WaitForAnswer(id).msg_invoke_method_reply().success());
  loop_.loop()->RunAndWait([&] { port_.reset(); });  // The first consumer goes.

  RecordingChannel channel2;
  PerfettoIpcTestClient client2;
  std::unique_ptr<PerfettoConsumerPort> port2 = std::make_unique<PerfettoConsumerPort>(&service_, &channel2);
  auto deliver2 = [&](const std::string& frame) {
    loop_.loop()->RunAndWait([&] { port2->OnFrame(frame); });
  };
  deliver2(client2.Bind("ConsumerPort"));
  ASSERT_TRUE(client2.TakeBindReply(channel2.frame(0)));
  pp::AttachRequest attach;
  attach.set_key("k");
  deliver2(client2.Invoke("Attach", attach, &id));
  ASSERT_TRUE(testing::WaitUntil([&] { return channel2.num_frames() >= 2; }));
  pp::AttachResponse attached;
  ASSERT_TRUE(PerfettoIpcTestClient::ParseReply(channel2.frame(1), &attached));
  EXPECT_EQ(attached.trace_config().data_sources(0).config().name(), "test.ds");
  pp::EnableTracingRequest notify;
  notify.set_attach_notification_only(true);
  uint64_t enable = 0;
  deliver2(client2.Invoke("EnableTracing", notify, &enable));
  deliver2(client2.Invoke("DisableTracing", pp::DisableTracingRequest()));
  ASSERT_TRUE(testing::WaitUntil([&] {
    for (size_t i = 0; i < channel2.num_frames(); i++)
      if (channel2.frame(i).request_id() == enable) return true;
    return false;
  }));
  loop_.loop()->RunAndWait([&] { port2.reset(); });
  fclose(file);
}

// What sluiced does not do is refused with the reason, not faked; a clone
// of a session that does not exist says so.
TEST_F(PerfettoConsumerPortTest, UnsupportedCallsAreRefused) {
  uint64_t id = 0;
  pp::CloneSessionRequest by_id;
  by_id.set_session_id(12345);
  Deliver(client_.Invoke("CloneSession", by_id, &id));
  pp::CloneSessionResponse clone;
  ASSERT_TRUE(PerfettoIpcTestClient::ParseReply(WaitForAnswer(id), &clone));
  EXPECT_FALSE(clone.success());
  EXPECT_NE(clone.error().find("no session '#12345'"), std::string::npos) << clone.error();
  Deliver(client_.Invoke("ChangeTraceConfig", pp::ChangeTraceConfigRequest(), &id));
  EXPECT_FALSE(WaitForAnswer(id).msg_invoke_method_reply().success());
  Deliver(client_.Invoke("SaveTraceForBugreport", pp::SaveTraceForBugreportRequest(), &id));
  pp::SaveTraceForBugreportResponse bugreport;
  ASSERT_TRUE(PerfettoIpcTestClient::ParseReply(WaitForAnswer(id), &bugreport));
  EXPECT_FALSE(bugreport.success());
  EXPECT_FALSE(channel_.closed());
}

}  // namespace
}  // namespace sluice
