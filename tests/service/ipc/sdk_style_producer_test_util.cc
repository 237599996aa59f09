#include "tests/service/ipc/sdk_style_producer_test_util.h"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "perfetto/ipc/producer_port.pb.h"
#include "service/ipc/ipc_frame.h"
#include "service/ipc/ipc_producer_protocol.h"
#include "service/ipc/ipc_socket.h"
#include "shm/trace_writer.h"
#include "sluice/ipc.pb.h"

namespace sluice::testing {
namespace {

namespace pp = perfetto::protos;

// Field numbers of upstream's trace protos (protos/perfetto/trace/...): the
// test writes the packets by hand, as the SDK's generated writers do.
namespace packet {
constexpr uint32_t kTimestamp = 8, kTrackEvent = 11, kInternedData = 12, kSequenceFlags = 13,
                   kTrackDescriptor = 60;
constexpr uint32_t kIncrementalStateCleared = 1, kNeedsIncrementalState = 2;  // SequenceFlags.
}  // namespace packet
namespace descriptor {
constexpr uint32_t kUuid = 1, kName = 2, kProcess = 3, kThread = 4, kParentUuid = 5, kCounter = 8;
constexpr uint32_t kProcessPid = 1, kProcessName = 6;                  // ProcessDescriptor
constexpr uint32_t kThreadPid = 1, kThreadTid = 2, kThreadName = 5;    // ThreadDescriptor
}  // namespace descriptor
namespace event {
constexpr uint32_t kCategoryIids = 3, kType = 9, kNameIid = 10, kTrackUuid = 11, kName = 23,
                   kCounterValue = 30, kFlowIds = 47, kTerminatingFlowIds = 48;
constexpr uint64_t kSliceBegin = 1, kSliceEnd = 2, kCounter = 4;  // TrackEvent.Type
}  // namespace event
namespace interned {
constexpr uint32_t kEventCategories = 1, kEventNames = 2, kIid = 1, kName = 2;
}  // namespace interned

constexpr uint64_t kProcessUuid = 0x5d0001, kThreadUuid = 0x5d0002, kCounterUuid = 0x5d0003;
constexpr uint64_t kFlowId = 0x42;

}  // namespace

SdkStyleProducer::~SdkStyleProducer() {
  arbiter_.reset();
  if (socket_.valid()) shutdown(socket_.get(), SHUT_RDWR);
  if (receiver_.joinable()) receiver_.join();
}

void SdkStyleProducer::SendFrame(const std::string& frame, int fd) {
  std::string bytes;
  AppendFrame(frame, &bytes);
  SendAll(socket_.get(), bytes.data(), bytes.size(), fd);
}

bool SdkStyleProducer::ReadFrame(pp::IPCFrame* frame) {
  for (;;) {
    if (read_buffer_.size() >= kFrameHeaderSize) {
      uint32_t size = 0;
      memcpy(&size, read_buffer_.data(), sizeof(size));  // Little endian, as x86 and arm64.
      if (read_buffer_.size() >= kFrameHeaderSize + size) {
        const bool ok = frame->ParseFromArray(read_buffer_.data() + kFrameHeaderSize, static_cast<int>(size));
        read_buffer_.erase(0, kFrameHeaderSize + size);
        return ok;
      }
    }
    char buf[64 * 1024];
    const ssize_t n = recv(socket_.get(), buf, sizeof(buf), 0);
    if (n <= 0) return false;
    read_buffer_.append(buf, static_cast<size_t>(n));
  }
}

Status SdkStyleProducer::Connect(const std::string& producer_socket) {
  SLUICE_ASSIGN_OR_RETURN(socket_, ConnectUnixSocket(producer_socket));
  // The SDK makes its SMB before it connects (startup tracing writes into it
  // early): a memfd sealed against shrinking.
  SLUICE_ASSIGN_OR_RETURN(smb_, SharedMemory::Create(kSmbBytes));
  pp::IPCFrame reply;
  SendFrame(client_.Bind("ProducerPort"));
  if (!ReadFrame(&reply) || !client_.TakeBindReply(reply)) return Status::Error("BindService failed");
  pp::InitializeConnectionRequest init;
  init.set_producer_name("sdk-style-app");
  init.set_shared_memory_size_hint_bytes(kSmbBytes);
  init.set_shared_memory_page_size_hint_bytes(kPageBytes);
  init.set_producer_provided_shmem(true);
  init.set_sdk_version("sluice test (Perfetto SDK style)");
  SendFrame(client_.Invoke("InitializeConnection", init), smb_->fd());
  pp::InitializeConnectionResponse init_reply;
  if (!ReadFrame(&reply) || !PerfettoIpcTestClient::ParseReply(reply, &init_reply))
    return Status::Error("InitializeConnection failed");
  if (!init_reply.using_shmem_provided_by_producer())
    return Status::Error("the service did not take the producer's SMB");
  arbiter_ = std::make_unique<SharedMemoryArbiter>(smb_->start(), smb_->size(), kPageBytes, this);
  pp::RegisterDataSourceRequest reg;
  reg.mutable_data_source_descriptor()->set_name(kDataSource);
  reg.mutable_data_source_descriptor()->set_handles_incremental_state_clear(true);
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    SendFrame(client_.Invoke("GetAsyncCommand", pp::GetAsyncCommandRequest(), &stream_id_));
    SendFrame(client_.Invoke("RegisterDataSource", reg, nullptr, /*drop_reply=*/true));
  }
  receiver_ = std::thread([this] { ReceiveCommands(); });
  return Status::Ok();
}

void SdkStyleProducer::ReceiveCommands() {
  pp::IPCFrame frame;
  while (ReadFrame(&frame)) {
    if (frame.request_id() != stream_id_) continue;  // Replies to other calls.
    pp::GetAsyncCommandResponse command;
    if (!PerfettoIpcTestClient::ParseReply(frame, &command)) continue;
    if (command.has_start_data_source()) {
      std::lock_guard<std::mutex> lock(mu_);
      target_buffer_ = command.start_data_source().config().target_buffer();
      started_ = true;
      cv_.notify_all();
    } else if (command.has_flush()) {
      if (arbiter_) arbiter_->FlushPendingCommitData(command.flush().request_id());
      flushes_answered_++;
    }
    // SetupTracing (no fd: the SMB is ours), SetupDataSource, StopDataSource
    // (will_notify_on_stop unset: nothing to answer), ClearIncrementalState
    // (this producer re-emits its state in every batch anyway).
  }
}

bool SdkStyleProducer::WaitForStart(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return started_; });
}

// One sequence, as the SDK writes a thread's track events:
//   descriptors: the process, the thread (child of the process), a counter
//     track "queue_depth" (child of the process);
//   on the thread: "Outer" [t+1000, t+5000) holding "Inner" [t+2000,
//     t+4000), names and the category "app" interned; "Next" [t+6000,
//     t+7000) by plain name;
//   a flow from "Outer" (flow id 0x42) ending at "Next" (terminating);
//   the counter: 7 at t+3000, 3 at t+8000.
void SdkStyleProducer::WriteTrackEvents(uint64_t t) {
  uint32_t target = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    target = target_buffer_;
  }
  auto writer = arbiter_->CreateTraceWriter(target, BufferExhaustedPolicy::kStall);
  const int pid = getpid();
  auto descriptor = [&](uint64_t uuid, bool first, auto&& body) {
    auto p = writer->NewTracePacket();
    p->WriteVarInt(packet::kTimestamp, t);
    if (first) p->WriteVarInt(packet::kSequenceFlags, packet::kIncrementalStateCleared);
    p->BeginNested(packet::kTrackDescriptor);
    p->WriteVarInt(descriptor::kUuid, uuid);
    body(*p.operator->());
    p->EndNested();
  };
  descriptor(kProcessUuid, true, [&](ProtoWriter& w) {
    w.BeginNested(descriptor::kProcess);
    w.WriteVarInt(descriptor::kProcessPid, static_cast<uint64_t>(pid));
    w.WriteString(descriptor::kProcessName, "sdk-style-app");
    w.EndNested();
  });
  descriptor(kThreadUuid, false, [&](ProtoWriter& w) {
    w.WriteVarInt(descriptor::kParentUuid, kProcessUuid);
    w.BeginNested(descriptor::kThread);
    w.WriteVarInt(descriptor::kThreadPid, static_cast<uint64_t>(pid));
    w.WriteVarInt(descriptor::kThreadTid, static_cast<uint64_t>(pid));
    w.WriteString(descriptor::kThreadName, "sdk-worker");
    w.EndNested();
  });
  descriptor(kCounterUuid, false, [&](ProtoWriter& w) {
    w.WriteVarInt(descriptor::kParentUuid, kProcessUuid);
    w.WriteString(descriptor::kName, "queue_depth");
    w.BeginNested(descriptor::kCounter);
    w.EndNested();
  });
  // `body` fills the TrackEvent; `interning` (if any) goes beside it.
  auto track_event = [&](uint64_t ts, uint64_t type, uint64_t track, auto&& body, auto&& interning) {
    auto p = writer->NewTracePacket();
    p->WriteVarInt(packet::kTimestamp, ts);
    p->WriteVarInt(packet::kSequenceFlags, packet::kNeedsIncrementalState);
    interning(*p.operator->());
    p->BeginNested(packet::kTrackEvent);
    p->WriteVarInt(event::kType, type);
    p->WriteVarInt(event::kTrackUuid, track);
    body(*p.operator->());
    p->EndNested();
  };
  auto none = [](ProtoWriter&) {};
  auto intern = [](ProtoWriter& w, uint32_t field, uint64_t iid, const char* name) {
    w.BeginNested(field);
    w.WriteVarInt(interned::kIid, iid);
    w.WriteString(interned::kName, name);
    w.EndNested();
  };
  track_event(t + 1000, event::kSliceBegin, kThreadUuid,
              [&](ProtoWriter& w) {
                w.WriteVarInt(event::kNameIid, 1);
                w.WriteVarInt(event::kCategoryIids, 1);
                w.WriteFixed64(event::kFlowIds, kFlowId);
              },
              [&](ProtoWriter& w) {
                w.BeginNested(packet::kInternedData);
                intern(w, interned::kEventNames, 1, "Outer");
                intern(w, interned::kEventCategories, 1, "app");
                w.EndNested();
              });
  track_event(t + 2000, event::kSliceBegin, kThreadUuid,
              [&](ProtoWriter& w) {
                w.WriteVarInt(event::kNameIid, 2);
                w.WriteVarInt(event::kCategoryIids, 1);
              },
              [&](ProtoWriter& w) {
                w.BeginNested(packet::kInternedData);
                intern(w, interned::kEventNames, 2, "Inner");
                w.EndNested();
              });
  track_event(t + 3000, event::kCounter, kCounterUuid,
              [&](ProtoWriter& w) { w.WriteVarInt(event::kCounterValue, 7); }, none);
  track_event(t + 4000, event::kSliceEnd, kThreadUuid, none, none);
  track_event(t + 5000, event::kSliceEnd, kThreadUuid, none, none);
  track_event(t + 6000, event::kSliceBegin, kThreadUuid,
              [&](ProtoWriter& w) {
                w.WriteString(event::kName, "Next");
                w.WriteFixed64(event::kTerminatingFlowIds, kFlowId);
              },
              none);
  track_event(t + 7000, event::kSliceEnd, kThreadUuid, none, none);
  track_event(t + 8000, event::kCounter, kCounterUuid,
              [&](ProtoWriter& w) { w.WriteVarInt(event::kCounterValue, 3); }, none);
  writer->Flush();
}

void SdkStyleProducer::CommitData(const CommitDataRequest& request) {
  protos::CommitDataRequest proto;  // Perfetto's field numbers (ipc.proto).
  CommitDataToProto(request, &proto);
  std::lock_guard<std::mutex> lock(send_mu_);
  SendFrame(client_.Invoke("CommitData", proto, nullptr, /*drop_reply=*/true));
}

void SdkStyleProducer::RegisterTraceWriter(uint16_t writer_id, uint32_t target_buffer) {
  pp::RegisterTraceWriterRequest req;
  req.set_trace_writer_id(writer_id);
  req.set_target_buffer(target_buffer);
  std::lock_guard<std::mutex> lock(send_mu_);
  SendFrame(client_.Invoke("RegisterTraceWriter", req, nullptr, true));
}

void SdkStyleProducer::UnregisterTraceWriter(uint16_t writer_id) {
  pp::UnregisterTraceWriterRequest req;
  req.set_trace_writer_id(writer_id);
  std::lock_guard<std::mutex> lock(send_mu_);
  SendFrame(client_.Invoke("UnregisterTraceWriter", req, nullptr, true));
}

}  // namespace sluice::testing
