// Tests of service/ipc/perfetto_producer_port.h and perfetto_ipc_host.h over
// a channel without a socket: a Perfetto producer, as upstream's
// traced_probes and SDK apps talk (BindService, then InvokeMethod calls; the
// service's commands on the GetAsyncCommand stream), records into a
// TracingService session through sluice's own SMB writer (the SMB ABI is
// Perfetto's). The same with upstream's real traced_probes over sockets is in
// tests/service/ipc/perfetto_interop_kernel_test.cc.
#include "service/ipc/perfetto_producer_port.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <future>
#include <mutex>

#include "gtest/gtest.h"
#include "perfetto/ipc/producer_port.pb.h"
#include "perfetto/ipc/wire_protocol.pb.h"
#include "service/event_loop.h"
#include "service/ipc/ipc_producer_protocol.h"
#include "service/ipc/perfetto_ipc_host.h"
#include "service/tracing_service.h"
#include "shm/shared_memory_arbiter.h"
#include "sluice/ipc.pb.h"
#include "tests/service/ipc/perfetto_ipc_test_client.h"
#include "tests/service/ipc/recording_channel.h"
#include "tests/service/service_test_util.h"

namespace sluice {
namespace {

namespace pp = perfetto::protos;
using testing::PerfettoIpcTestClient;
using testing::RecordingChannel;

// A Perfetto producer driven by the test: frames go to the port on the
// service thread; commits of its SMB writer travel as Perfetto's CommitData
// and RegisterTraceWriter calls.
class PerfettoProducerPortTest : public ::testing::Test, public CommitDataSink {
 protected:
  PerfettoProducerPortTest()
      : service_(loop_.loop()), port_(std::make_unique<PerfettoProducerPort>(&service_, &channel_)) {}
  ~PerfettoProducerPortTest() override {
    writer_.reset();
    arbiter_.reset();
    loop_.loop()->RunAndWait([&] { port_.reset(); });
  }

  // Sends a frame; returns the index of the first frame sent after it.
  size_t Deliver(const std::string& frame) {
    const size_t first = channel_.num_frames();
    loop_.loop()->RunAndWait([&] { port_->OnFrame(frame); });
    return first;
  }

  // Binds ProducerPort, initializes and opens the command stream. Returns
  // the stream's request id.
  uint64_t Connect(const pp::InitializeConnectionRequest& init) {
    const size_t bind = Deliver(client_.Bind("ProducerPort"));
    EXPECT_TRUE(client_.TakeBindReply(channel_.frame(bind)));
    uint64_t init_id = 0;
    const size_t reply = Deliver(client_.Invoke("InitializeConnection", init, &init_id));
    EXPECT_EQ(channel_.frame(reply).request_id(), init_id);
    EXPECT_TRUE(PerfettoIpcTestClient::ParseReply(channel_.frame(reply), &init_response_));
    uint64_t stream_id = 0;
    setup_tracing_frame_ = Deliver(client_.Invoke("GetAsyncCommand", pp::GetAsyncCommandRequest(), &stream_id));
    return stream_id;
  }

  // The command of frame i (a has_more reply on the stream).
  pp::GetAsyncCommandResponse Command(size_t i, uint64_t stream_id) {
    pp::IPCFrame f = channel_.frame(i);
    EXPECT_EQ(f.request_id(), stream_id);
    EXPECT_TRUE(f.msg_invoke_method_reply().has_more());
    pp::GetAsyncCommandResponse command;
    EXPECT_TRUE(PerfettoIpcTestClient::ParseReply(f, &command));
    return command;
  }

  // Waits for the next command frame at or after *next; returns it.
  pp::GetAsyncCommandResponse NextCommand(size_t* next, uint64_t stream_id) {
    EXPECT_TRUE(testing::WaitUntil([&] { return channel_.num_frames() > *next; }));
    return Command((*next)++, stream_id);
  }

  // CommitDataSink: the producer's commits, as Perfetto's calls.
  void CommitData(const CommitDataRequest& request) override {
    protos::CommitDataRequest proto;
    CommitDataToProto(request, &proto);
    Deliver(client_.Invoke("CommitData", proto, nullptr, /*drop_reply=*/true));
  }
  void RegisterTraceWriter(uint16_t writer_id, uint32_t target_buffer) override {
    pp::RegisterTraceWriterRequest req;
    req.set_trace_writer_id(writer_id);
    req.set_target_buffer(target_buffer);
    Deliver(client_.Invoke("RegisterTraceWriter", req, nullptr, true));
  }
  void UnregisterTraceWriter(uint16_t writer_id) override {
    pp::UnregisterTraceWriterRequest req;
    req.set_trace_writer_id(writer_id);
    Deliver(client_.Invoke("UnregisterTraceWriter", req, nullptr, true));
  }

  void RegisterDataSource(const std::string& name) {
    pp::RegisterDataSourceRequest req;
    req.mutable_data_source_descriptor()->set_name(name);
    const size_t reply = Deliver(client_.Invoke("RegisterDataSource", req));
    pp::RegisterDataSourceResponse response;
    EXPECT_TRUE(PerfettoIpcTestClient::ParseReply(channel_.frame(reply), &response));
  }

  // Records `packets` test packets through a session and checks that they
  // all come back. The SMB is at `smb` (mapped by the test).
  void RecordThroughSession(uint8_t* smb, uint32_t smb_size, uint32_t page_size, uint64_t stream_id,
                            uint32_t packets) {
    RegisterDataSource("test.ds");
    size_t next = channel_.num_frames();
    auto consumer = service_.ConnectConsumer();
    ASSERT_TRUE(consumer->EnableTracing(testing::MakeConfig(1024, "test.ds")).ok());
    pp::GetAsyncCommandResponse setup = NextCommand(&next, stream_id);
    ASSERT_TRUE(setup.has_setup_data_source());
    pp::GetAsyncCommandResponse start = NextCommand(&next, stream_id);
    ASSERT_TRUE(start.has_start_data_source());
    EXPECT_EQ(start.start_data_source().new_instance_id(), setup.setup_data_source().new_instance_id());

    arbiter_ = std::make_unique<SharedMemoryArbiter>(smb, smb_size, page_size, this);
    writer_ = arbiter_->CreateTraceWriter(start.start_data_source().config().target_buffer());
    for (uint32_t i = 0; i < packets; i++) testing::WriteTestPacket(writer_.get(), {1, writer_->writer_id(), i});
    writer_->Flush();

    // The flush: answered by a CommitData that carries its id, nothing more.
    auto flushed = std::async(std::launch::async, [&] { return consumer->Flush(20000); });
    pp::GetAsyncCommandResponse flush = NextCommand(&next, stream_id);
    ASSERT_TRUE(flush.has_flush());
    EXPECT_EQ(flush.flush().data_source_ids_size(), 1);
    arbiter_->FlushPendingCommitData(flush.flush().request_id());
    StatusOr<bool> ok = flushed.get();
    ASSERT_TRUE(ok.ok());
    EXPECT_TRUE(ok.value()) << "the CommitData with the flush id completes the flush";

    std::set<uint32_t> seen;
    for (const auto& p : testing::ReadAllPackets(consumer.get())) {
      testing::TestPacketId id;
      if (testing::ParseTestPacket(p, &id)) {
        EXPECT_TRUE(seen.insert(id.seq).second) << id.seq;
      }
    }
    EXPECT_EQ(seen.size(), packets);
    auto stats = consumer->GetTraceStats();
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->buffer_stats(0).abi_violations(), 0u);
    EXPECT_EQ(port_->sluice_port().violations(), 0u);
    // The stop: a last flush, answered, then the stop itself.
    ASSERT_TRUE(consumer->DisableTracing().ok());
    pp::GetAsyncCommandResponse last_flush = NextCommand(&next, stream_id);
    ASSERT_TRUE(last_flush.has_flush());
    arbiter_->FlushPendingCommitData(last_flush.flush().request_id());
    EXPECT_TRUE(NextCommand(&next, stream_id).has_stop_data_source());
    EXPECT_TRUE(consumer->WaitForTracingDisabled(20000));
    writer_.reset();
  }

  EventLoopThread loop_;
  TracingService service_;
  RecordingChannel channel_;
  std::unique_ptr<PerfettoProducerPort> port_;
  PerfettoIpcTestClient client_;
  pp::InitializeConnectionResponse init_response_;
  size_t setup_tracing_frame_ = 0;
  std::unique_ptr<SharedMemoryArbiter> arbiter_;
  std::unique_ptr<TraceWriter> writer_;
};

// A connection's first frame says which protocol it speaks. sluice's first
// frames (a producer's InitializeConnection, a consumer's request, even one
// whose field 3 would read as a BindService) never look like Perfetto's.
TEST(PerfettoIpcHostTest, TheFirstFrameTellsTheProtocolsApart) {
  PerfettoIpcTestClient client;
  EXPECT_TRUE(IsPerfettoIpcFrame(client.Bind("ProducerPort")));
  EXPECT_TRUE(IsPerfettoIpcFrame(client.Bind("ConsumerPort")));
  protos::ProducerToService init;
  init.mutable_initialize_connection()->set_producer_name("p");
  EXPECT_FALSE(IsPerfettoIpcFrame(init.SerializeAsString()));
  protos::ConsumerToService start;
  start.set_request_id(7);
  start.mutable_start_tracing();  // Field 3, as IPCFrame's msg_bind_service.
  EXPECT_FALSE(IsPerfettoIpcFrame(start.SerializeAsString()));
  EXPECT_FALSE(IsPerfettoIpcFrame(std::string("\xff\xff\xff", 3)));
  EXPECT_FALSE(IsPerfettoIpcFrame(""));
}

TEST_F(PerfettoProducerPortTest, BindAnswersTheMethodsAndRefusesOtherServices) {
  const size_t other = Deliver(client_.Bind("ConsumerPort"));
  pp::IPCFrame refused = channel_.frame(other);
  ASSERT_TRUE(refused.has_msg_bind_service_reply());
  EXPECT_FALSE(refused.msg_bind_service_reply().success());
  const size_t bind = Deliver(client_.Bind("ProducerPort"));
  ASSERT_TRUE(client_.TakeBindReply(channel_.frame(bind)));
  for (const char* method : {"InitializeConnection", "RegisterDataSource", "UnregisterDataSource",
                             "CommitData", "GetAsyncCommand", "RegisterTraceWriter",
                             "UnregisterTraceWriter", "NotifyDataSourceStarted",
                             "NotifyDataSourceStopped", "ActivateTriggers", "Sync",
                             "UpdateDataSource"})
    EXPECT_EQ(client_.methods().count(method), 1u) << method;
  EXPECT_FALSE(channel_.closed());
}

// traced_probes' way: the service makes the SMB and sends it as the first
// command of the stream (SetupTracing, with the fd), after answering
// InitializeConnection; data sources are set up and started on the stream,
// and a flush is answered by a CommitData carrying the flush id.
TEST_F(PerfettoProducerPortTest, RecordsThroughTheServiceOnTheServicesSmb) {
  pp::InitializeConnectionRequest init;
  init.set_producer_name("perfetto-style");
  init.set_shared_memory_page_size_hint_bytes(4096);
  init.set_shared_memory_size_hint_bytes(256 * 1024);
  const uint64_t stream = Connect(init);
  EXPECT_FALSE(init_response_.using_shmem_provided_by_producer());
  EXPECT_FALSE(init_response_.direct_smb_patching_supported());
  pp::GetAsyncCommandResponse setup = Command(setup_tracing_frame_, stream);
  ASSERT_TRUE(setup.has_setup_tracing());
  EXPECT_EQ(setup.setup_tracing().shared_buffer_page_size_kb(), 4u);
  ScopedFd smb_fd = channel_.TakeFd(setup_tracing_frame_);
  ASSERT_TRUE(smb_fd.valid()) << "SetupTracing carries the SMB";
  auto smb = SharedMemory::Attach(smb_fd.release(), 0);
  ASSERT_TRUE(smb.ok());
  RecordThroughSession(smb.value()->start(), smb.value()->size(), 4096, stream, 300);
}

// An SDK producer's way: it made the SMB (a sealed memfd) and sends it with
// InitializeConnection; the service maps it, says so, and SetupTracing
// comes without an fd.
TEST_F(PerfettoProducerPortTest, RecordsThroughTheServiceOnTheProducersSmb) {
  constexpr uint32_t kSize = 128 * 1024;
  auto smb = SharedMemory::Create(kSize);  // Sealed against shrinking, as the SDK's.
  ASSERT_TRUE(smb.ok());
  channel_.QueueReceivedFd(smb.value()->fd());
  pp::InitializeConnectionRequest init;
  init.set_producer_name("sdk-style");
  init.set_shared_memory_page_size_hint_bytes(8192);
  init.set_producer_provided_shmem(true);
  const uint64_t stream = Connect(init);
  EXPECT_TRUE(init_response_.using_shmem_provided_by_producer());
  pp::GetAsyncCommandResponse setup = Command(setup_tracing_frame_, stream);
  ASSERT_TRUE(setup.has_setup_tracing());
  EXPECT_EQ(setup.setup_tracing().shared_buffer_page_size_kb(), 8u);
  EXPECT_FALSE(channel_.TakeFd(setup_tracing_frame_).valid());
  RecordThroughSession(smb.value()->start(), kSize, 8192, stream, 300);
}

// A producer's SMB that it could still shrink (not sealed) would let it
// fault the service: refused, and the connection closed.
TEST_F(PerfettoProducerPortTest, AProducersSmbThatCanShrinkIsRefused) {
  ScopedFd memfd(memfd_create("unsealed", MFD_CLOEXEC));
  ASSERT_TRUE(memfd.valid());
  ASSERT_EQ(ftruncate(memfd.get(), 64 * 1024), 0);
  channel_.QueueReceivedFd(memfd.get());
  Deliver(client_.Bind("ProducerPort"));
  client_.TakeBindReply(channel_.frame(0));
  pp::InitializeConnectionRequest init;
  init.set_shared_memory_page_size_hint_bytes(4096);
  init.set_producer_provided_shmem(true);
  const size_t reply = Deliver(client_.Invoke("InitializeConnection", init));
  EXPECT_FALSE(channel_.frame(reply).msg_invoke_method_reply().success());
  EXPECT_TRUE(channel_.closed());
}

// Calls that make no sense are answered as failed and counted; enough of
// them close the connection, as for a sluice producer.
TEST_F(PerfettoProducerPortTest, BadCallsFailAndCountAsViolations) {
  pp::InitializeConnectionRequest init;
  init.set_shared_memory_size_hint_bytes(64 * 1024);
  Connect(init);
  // Arguments that do not parse.
  pp::IPCFrame bad;
  bad.set_request_id(1000);
  bad.mutable_msg_invoke_method()->set_service_id(PerfettoIpcHost::kServiceId);
  bad.mutable_msg_invoke_method()->set_method_id(client_.methods().at("RegisterDataSource"));
  bad.mutable_msg_invoke_method()->set_args_proto("\xff\xff\xff");
  size_t reply = Deliver(bad.SerializeAsString());
  EXPECT_FALSE(channel_.frame(reply).msg_invoke_method_reply().success());
  // A method the service does not have.
  bad.mutable_msg_invoke_method()->set_method_id(99);
  reply = Deliver(bad.SerializeAsString());
  EXPECT_FALSE(channel_.frame(reply).msg_invoke_method_reply().success());
  // A second InitializeConnection, and a writer id beyond 10 bits.
  reply = Deliver(client_.Invoke("InitializeConnection", init));
  EXPECT_FALSE(channel_.frame(reply).msg_invoke_method_reply().success());
  pp::RegisterTraceWriterRequest writer;
  writer.set_trace_writer_id(70000);
  reply = Deliver(client_.Invoke("RegisterTraceWriter", writer));
  EXPECT_FALSE(channel_.frame(reply).msg_invoke_method_reply().success());
  EXPECT_EQ(port_->sluice_port().violations(), 4u);
  EXPECT_FALSE(channel_.closed());
  for (uint32_t i = 4; i < IpcProducerPort::kViolationsBeforeClose; i++) Deliver(bad.SerializeAsString());
  EXPECT_TRUE(channel_.closed());
}

// A frame that is not an IPCFrame at all closes the connection at once.
TEST_F(PerfettoProducerPortTest, AFrameThatIsNotAnIpcFrameCloses) {
  Deliver(client_.Bind("ProducerPort"));
  Deliver(std::string("\xff\xff\xff\xff", 4));
  EXPECT_TRUE(channel_.closed());
}

// Sync is answered once everything sent before it is handled; an update of
// a data source is answered (the service keeps nothing it could change).
TEST_F(PerfettoProducerPortTest, SyncAndUpdateDataSourceAreAnswered) {
  pp::InitializeConnectionRequest init;
  Connect(init);
  uint64_t id = 0;
  size_t reply = Deliver(client_.Invoke("Sync", pp::SyncRequest(), &id));
  EXPECT_EQ(channel_.frame(reply).request_id(), id);
  EXPECT_TRUE(channel_.frame(reply).msg_invoke_method_reply().success());
  pp::UpdateDataSourceRequest update;
  update.mutable_data_source_descriptor()->set_name("x");
  reply = Deliver(client_.Invoke("UpdateDataSource", update));
  EXPECT_TRUE(channel_.frame(reply).msg_invoke_method_reply().success());
}

}  // namespace
}  // namespace sluice
