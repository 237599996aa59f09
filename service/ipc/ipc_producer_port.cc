#include "service/ipc/ipc_producer_port.h"

#include "perfetto/config/data_source_config.pb.h"
#include "service/ipc/ipc_frame.h"
#include "service/ipc/ipc_producer_protocol.h"
#include "service/producer_host.h"
#include "sluice/ipc.pb.h"

namespace sluice {

IpcProducerPort::IpcProducerPort(ProducerHost* service, IpcChannel* channel)
    : service_(service), channel_(channel) {}

IpcProducerPort::~IpcProducerPort() = default;

void IpcProducerPort::Violation(const char* what) {
  violations_++;
  if (violations_ >= kViolationsBeforeClose && !closing_) {
    closing_ = true;
    channel_->Close(std::string("too many protocol violations (last: ") + what + ")");
  }
}

void IpcProducerPort::OnFrame(std::string_view frame) {
  if (closing_) return;
  protos::ProducerToService msg;
  if (!msg.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
    return Refuse("producer sent a frame that is not a ProducerToService message");
  }
  HandleMessage(msg);
}

void IpcProducerPort::HandleMessage(const protos::ProducerToService& msg) {
  if (closing_) return;
  if (!connection_) {
    if (msg.msg_case() != protos::ProducerToService::kInitializeConnection) {
      return Refuse("producer did not start with InitializeConnection");
    }
    return Connect(msg.initialize_connection());
  }
  // A writer event may ride alone or beside another request.
  if (HandleWriterEvent(msg) && msg.msg_case() == protos::ProducerToService::MSG_NOT_SET) return;
  HandleRequest(msg);
}

void IpcProducerPort::Refuse(const std::string& reason) {
  closing_ = true;
  service_->CountDroppedIpcConnection();
  channel_->Close(reason);
}

void IpcProducerPort::Connect(const protos::InitializeConnection& init) {
  ProducerOptions options;
  options.name = init.producer_name();
  options.shm_size_hint_bytes = init.shm_size_hint_bytes();
  options.shm_page_size_hint_bytes = init.shm_page_size_hint_bytes();
  ScopedFd producer_shm;
  if (init.producer_provided_shm()) {
    producer_shm = channel_->TakeReceivedFd();
    if (!producer_shm.valid()) return Refuse("producer said it provides the SMB but sent no fd");
    options.producer_shm_fd = producer_shm.get();
  }
  int shm_fd = -1;
  auto conn = service_->ConnectProducer(this, options, channel_->peer(), &shm_fd);
  protos::ServiceToProducer reply;
  auto* response = reply.mutable_initialize_connection_response();
  response->set_protocol_version(kIpcVersion);
  if (!conn.ok()) {
    response->set_error(conn.status().message());
    channel_->Send(reply);
    closing_ = true;
    channel_->Close("producer refused: " + conn.status().message());
    return;
  }
  connection_ = std::move(conn.value());
  response->set_shm_size_bytes(connection_->shm_size());
  response->set_shm_page_size_bytes(connection_->shm_page_size());
  response->set_using_producer_shm(producer_shm.valid());
  channel_->Send(reply, shm_fd);
}

bool IpcProducerPort::HandleWriterEvent(const protos::ProducerToService& msg) {
  WriterEvent ev = GetWriterEvent(msg);
  if (ev.kind == WriterEvent::kNone) return false;
  if (ev.kind == WriterEvent::kMalformed) {
    Violation("malformed writer event");
    return false;
  }
  if (ev.writer_id == 0 || ev.writer_id > 0xffff) {
    Violation("writer id out of range");
  } else if (ev.kind == WriterEvent::kRegister) {
    connection_->commit_data_sink()->RegisterTraceWriter(static_cast<uint16_t>(ev.writer_id),
                                                         ev.target_buffer);
  } else {
    connection_->commit_data_sink()->UnregisterTraceWriter(static_cast<uint16_t>(ev.writer_id));
  }
  return true;
}

void IpcProducerPort::HandleRequest(const protos::ProducerToService& msg) {
  switch (msg.msg_case()) {
    case protos::ProducerToService::kInitializeConnection:
      Violation("second InitializeConnection");
      return;
    case protos::ProducerToService::kCommitData: {
      uint32_t malformed = 0;
      CommitDataFromProto(msg.commit_data(), &scratch_request_, &malformed);
      for (uint32_t i = 0; i < malformed && !closing_; i++) Violation("malformed patch");
      if (scratch_request_.flush_request_id != 0)
        flush_frames_.erase(scratch_request_.flush_request_id);
      connection_->commit_data_sink()->CommitData(scratch_request_);
      return;
    }
    case protos::ProducerToService::MSG_NOT_SET:
      Violation("empty message");
      return;
    default:
      if (msg.msg_case() == protos::ProducerToService::kNotifyFlushComplete)
        flush_frames_.erase(msg.notify_flush_complete().flush_request_id());
      ForwardProducerRequest(msg, connection_.get());
      return;
  }
}

void IpcProducerPort::SetupDataSource(DataSourceInstanceId id,
                                      const perfetto::protos::DataSourceConfig& config) {
  protos::ServiceToProducer msg;
  auto* m = msg.mutable_setup_data_source();
  m->set_data_source_id(id);
  *m->mutable_config() = config;
  channel_->Send(msg);
}

void IpcProducerPort::StartDataSource(DataSourceInstanceId id,
                                      const perfetto::protos::DataSourceConfig& config) {
  protos::ServiceToProducer msg;
  auto* m = msg.mutable_start_data_source();
  m->set_data_source_id(id);
  *m->mutable_config() = config;
  channel_->Send(msg);
}

void IpcProducerPort::StopDataSource(DataSourceInstanceId id) {
  protos::ServiceToProducer msg;
  msg.mutable_stop_data_source()->set_data_source_id(id);
  channel_->Send(msg);
}

void IpcProducerPort::Flush(FlushRequestId id, const std::vector<DataSourceInstanceId>& instances) {
  protos::ServiceToProducer msg;
  auto* m = msg.mutable_flush();
  m->set_flush_request_id(id);
  for (DataSourceInstanceId i : instances) m->add_data_source_ids(i);
  channel_->Send(msg);
  if (flush_frames_.size() >= kMaxFlushFrames) flush_frames_.erase(flush_frames_.begin());
  flush_frames_[id] = channel_->frames_sent();
}

void IpcProducerPort::OnFlushTimeout(FlushRequestId id) {
  auto it = flush_frames_.find(id);
  if (it == flush_frames_.end()) return;
  const uint64_t frame = it->second;
  flush_frames_.erase(it);
  if (closing_ || channel_->PeerHasRead(frame)) return;  // Read, not answered: a failed flush only.
  DropNotReading("it had not read the Flush request when the flush timed out");
}

void IpcProducerPort::OnPeerNotReading() {
  if (closing_) return;
  service_->CountProducerNotReading(this, "its output queue is full");
  closing_ = true;  // The connection closes itself.
}

void IpcProducerPort::DropNotReading(const std::string& why) {
  service_->CountProducerNotReading(this, why);
  closing_ = true;
  channel_->Close("producer does not read its socket: " + why);
}

void IpcProducerPort::ClearIncrementalState(const std::vector<DataSourceInstanceId>& instances) {
  protos::ServiceToProducer msg;
  auto* m = msg.mutable_clear_incremental_state();
  for (DataSourceInstanceId i : instances) m->add_data_source_ids(i);
  channel_->Send(msg);
}

void IpcProducerPort::OnTriggersActivated(uint32_t sessions_triggered) {
  protos::ServiceToProducer msg;
  msg.mutable_activate_triggers_response()->set_sessions_triggered(sessions_triggered);
  channel_->Send(msg);
}

void IpcProducerPort::OnDisconnect(const std::string& reason) {
  if (closing_) return;
  closing_ = true;
  channel_->Close(reason);
}

}  // namespace sluice
