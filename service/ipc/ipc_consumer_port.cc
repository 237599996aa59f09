#include "service/ipc/ipc_consumer_port.h"

#include <algorithm>

#include "perfetto/common/trace_stats.pb.h"
#include "perfetto/config/trace_config.pb.h"
#include "sluice/ipc.pb.h"

namespace sluice {

IpcConsumerPort::IpcConsumerPort(TracingService* service, IpcChannel* channel)
    : service_(service), channel_(channel) {
  id_ = service_->AddConsumer(this, channel_->peer());
}

IpcConsumerPort::~IpcConsumerPort() {
  *alive_ = false;
  service_->RemoveConsumer(id_);
}

void IpcConsumerPort::OnFrame(std::string_view frame) {
  if (closing_) return;
  protos::ConsumerToService msg;
  if (!msg.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
    closing_ = true;
    service_->CountDroppedIpcConnection();
    channel_->Close("consumer sent a frame that is not a ConsumerToService message");
    return;
  }
  // A flush is answered when it completes, not now.
  if (msg.msg_case() == protos::ConsumerToService::kFlush) return StartFlush(msg);
  protos::ServiceToConsumer reply;
  reply.set_request_id(msg.request_id());
  Status st = HandleRequest(msg, &reply);
  if (!st.ok()) reply.set_error(st.message().empty() ? "failed" : st.message());
  channel_->Send(reply);
}

Status IpcConsumerPort::HandleRequest(const protos::ConsumerToService& msg,
                                      protos::ServiceToConsumer* reply) {
  switch (msg.msg_case()) {
    case protos::ConsumerToService::kEnableTracing: {
      const auto& config = msg.enable_tracing().trace_config();
      ScopedFd fd;
      if (config.write_into_file() && config.output_path().empty()) fd = channel_->TakeReceivedFd();
      SLUICE_RETURN_IF_ERROR(service_->EnableTracing(id_, config, std::move(fd)));
      reply->mutable_enable_tracing();
      return Status::Ok();
    }
    case protos::ConsumerToService::kStartTracing:
      SLUICE_RETURN_IF_ERROR(service_->StartTracing(id_));
      reply->mutable_start_tracing();
      return Status::Ok();
    case protos::ConsumerToService::kDisableTracing:
      SLUICE_RETURN_IF_ERROR(service_->DisableTracing(id_));
      reply->mutable_disable_tracing();
      return Status::Ok();
    case protos::ConsumerToService::kReadBuffers:
      return SendBuffers(reply);
    case protos::ConsumerToService::kGetTraceStats: {
      SLUICE_ASSIGN_OR_RETURN(auto stats, service_->GetTraceStats(id_));
      *reply->mutable_get_trace_stats()->mutable_trace_stats() = stats;
      return Status::Ok();
    }
    case protos::ConsumerToService::kFreeBuffers:
      SLUICE_RETURN_IF_ERROR(service_->FreeBuffers(id_));
      reply->mutable_free_buffers();
      return Status::Ok();
    case protos::ConsumerToService::kQueryServiceState:
      FillServiceState(service_->QueryServiceState(), reply->mutable_query_service_state());
      return Status::Ok();
    case protos::ConsumerToService::kFlush:  // Handled by StartFlush.
    case protos::ConsumerToService::MSG_NOT_SET:
      break;
  }
  return Status::Error("empty or unknown request (is the consumer newer than sluiced?)");
}

void IpcConsumerPort::StartFlush(const protos::ConsumerToService& msg) {
  std::weak_ptr<bool> alive = alive_;
  IpcChannel* channel = channel_;
  uint64_t request_id = msg.request_id();
  service_->Flush(id_, msg.flush().timeout_ms(), [alive, channel, request_id](bool ok) {
    if (!alive.lock()) return;
    protos::ServiceToConsumer r;
    r.set_request_id(request_id);
    r.mutable_flush()->set_success(ok);
    channel->Send(r);
  });
}

// Reads the session's buffers and sends them in frames of at most about
// kReadBuffersSliceBytes; a packet larger than that travels as several
// slices. The last frame (`reply`, sent by the caller) says last = true.
Status IpcConsumerPort::SendBuffers(protos::ServiceToConsumer* reply) {
  auto* rb = reply->mutable_read_buffers();
  size_t frame_bytes = 0;
  bool more = true;
  while (more) {
    std::vector<std::string> packets;
    SLUICE_RETURN_IF_ERROR(service_->ReadBuffers(id_, &packets, &more));
    for (const std::string& p : packets) {
      size_t off = 0;
      do {  // Once for an empty packet.
        size_t n = std::min(p.size() - off, kReadBuffersSliceBytes);
        if (frame_bytes > 0 && frame_bytes + n > kReadBuffersSliceBytes) {
          channel_->Send(*reply);
          rb->clear_slices();
          frame_bytes = 0;
        }
        auto* slice = rb->add_slices();
        slice->set_data(p.data() + off, n);
        off += n;
        slice->set_last_slice_for_packet(off == p.size());
        frame_bytes += n + 16;  // Slice overhead, generously.
      } while (off < p.size());
    }
  }
  rb->set_last(true);
  return Status::Ok();
}

void IpcConsumerPort::FillServiceState(const ServiceState& st,
                                       protos::QueryServiceStateResponse* r) {
  for (const auto& p : st.producers) {
    auto* rp = r->add_producers();
    rp->set_id(p.id);
    rp->set_name(p.name);
    rp->set_pid(p.pid);
    rp->set_uid(p.uid);
  }
  for (const auto& d : st.data_sources) {
    auto* rd = r->add_data_sources();
    rd->set_producer_id(d.producer_id);
    rd->set_name(d.name);
  }
  r->set_num_sessions(st.num_sessions);
  r->set_num_sessions_started(st.num_sessions_started);
  r->set_service_version(st.service_version);
}

void IpcConsumerPort::OnTracingDisabled(const std::string& error) {
  protos::ServiceToConsumer msg;
  msg.set_request_id(0);
  msg.mutable_tracing_disabled()->set_error(error);
  channel_->Send(msg);
}

}  // namespace sluice
