#include "service/ipc/ipc_consumer_port.h"

#include <algorithm>

#include "perfetto/common/trace_stats.pb.h"
#include "perfetto/config/trace_config.pb.h"
#include "service/ipc/session_description.h"
#include "sluice/ipc.pb.h"

namespace sluice {

IpcConsumerPort::IpcConsumerPort(TracingService* service, IpcChannel* channel)
    : service_(service), channel_(channel), allowed_(service->CheckConsumerAllowed(channel->peer())) {
  id_ = service_->AddConsumer(this, channel_->peer());
}

IpcConsumerPort::~IpcConsumerPort() {
  *alive_ = false;
  service_->RemoveConsumer(id_);
}

void IpcConsumerPort::OnFrame(std::string_view frame) {
  if (closing_) return;
  if (reading_) {
    if (deferred_requests_.size() >= kMaxDeferredRequests) {
      closing_ = true;
      service_->CountDroppedIpcConnection();
      channel_->Close("consumer sent more than " + std::to_string(kMaxDeferredRequests) +
                      " requests during a ReadBuffers answer");
      return;
    }
    deferred_requests_.emplace_back(frame);
    return;
  }
  HandleFrame(frame);
}

void IpcConsumerPort::HandleFrame(std::string_view frame) {
  protos::ConsumerToService msg;
  if (!msg.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
    closing_ = true;
    service_->CountDroppedIpcConnection();
    channel_->Close("consumer sent a frame that is not a ConsumerToService message");
    return;
  }
  if (!allowed_.ok()) {
    protos::ServiceToConsumer reply;
    reply.set_request_id(msg.request_id());
    reply.set_error(allowed_.message());
    channel_->Send(reply);
    return;
  }
  // A flush (and a clone, which flushes first) is answered when it
  // completes, a read as the consumer takes it.
  if (msg.msg_case() == protos::ConsumerToService::kFlush) return StartFlush(msg);
  if (msg.msg_case() == protos::ConsumerToService::kCloneSession) return StartClone(msg);
  if (msg.msg_case() == protos::ConsumerToService::kReadBuffers) {
    reading_ = true;
    read_request_id_ = msg.request_id();
    return ContinueRead();
  }
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
      const auto& request = msg.enable_tracing();
      const auto& config = request.trace_config();
      ScopedFd fd;
      if (request.has_output_fd() || (config.write_into_file() && config.output_path().empty()))
        fd = channel_->TakeReceivedFd();
      SessionOptions options;
      options.key = request.key();
      options.output_path = request.output_path();
      options.output_temp_path = request.output_temp_path();
      options.rest_flush_period_ms = request.rest_flush_period_ms();
      options.rotation.max_bytes = request.rotate_max_bytes();
      options.rotation.max_ms = request.rotate_max_ms();
      options.rotation.keep = request.rotate_keep();
      options.rotation.stem = request.rotate_stem();
      options.rotation.extension = request.rotate_extension();
      SLUICE_RETURN_IF_ERROR(service_->EnableTracing(id_, config, std::move(fd), options));
      reply->mutable_enable_tracing();
      return Status::Ok();
    }
    case protos::ConsumerToService::kDetach:
      SLUICE_RETURN_IF_ERROR(service_->Detach(id_, msg.detach().key()));
      reply->mutable_detach();
      return Status::Ok();
    case protos::ConsumerToService::kAttach: {
      SLUICE_ASSIGN_OR_RETURN(AttachedSession attached, service_->Attach(id_, msg.attach().key()));
      SessionInfoToProto(attached.info, reply->mutable_attach()->mutable_session());
      *reply->mutable_attach()->mutable_trace_config() = attached.config;
      return Status::Ok();
    }
    case protos::ConsumerToService::kListSessions: {
      SessionList list = service_->ListSessions(id_);
      auto* out = reply->mutable_list_sessions();
      for (const SessionInfo& info : list.sessions) SessionInfoToProto(info, out->add_sessions());
      out->set_other_users(list.other_users);
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
    case protos::ConsumerToService::kFlush:        // StartFlush.
    case protos::ConsumerToService::kCloneSession:  // StartClone.
    case protos::ConsumerToService::kReadBuffers:  // ContinueRead.
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

void IpcConsumerPort::StartClone(const protos::ConsumerToService& msg) {
  std::weak_ptr<bool> alive = alive_;
  IpcChannel* channel = channel_;
  uint64_t request_id = msg.request_id();
  service_->CloneSession(id_, msg.clone_session().key(),
                         [alive, channel, request_id](StatusOr<CloneResult> result) {
                           if (!alive.lock()) return;
                           protos::ServiceToConsumer r;
                           r.set_request_id(request_id);
                           if (!result.ok()) {
                             r.set_error(result.status().message());
                           } else {
                             r.mutable_clone_session()->set_source_session_id(result->source_id);
                             r.mutable_clone_session()->set_flushed(result->flushed);
                             perfetto::protos::TraceConfig compression;
                             SetTraceCompression(result->compression, &compression);
                             if (compression.has_compression())
                               *r.mutable_clone_session()->mutable_compression() = compression.compression();
                           }
                           channel->Send(r);
                         });
}

// Sends the session's packets in frames of at most about
// kReadBuffersSliceBytes (a packet larger than that travels as several
// slices), one service read at a time, while the connection's queue has
// room; the frame with `last` ends the answer.
void IpcConsumerPort::ContinueRead() {
  protos::ServiceToConsumer reply;
  reply.set_request_id(read_request_id_);
  auto* rb = reply.mutable_read_buffers();
  size_t frame_bytes = 0;
  for (;;) {
    if (closing_) return;
    if (channel_->queued_output_bytes() > kReadAheadBytes) {
      // The consumer is behind: go on once it read most of what is queued.
      std::weak_ptr<bool> alive = alive_;
      channel_->NotifyWhenOutputAtMost(kReadResumeBytes, [this, alive] {
        if (alive.lock()) ContinueRead();
      });
      return;
    }
    std::vector<std::string> packets;
    bool more = false;
    Status st = service_->ReadBuffers(id_, &packets, &more, kReadBuffersSliceBytes);
    if (!st.ok()) {
      reply.set_error(st.message().empty() ? "failed" : st.message());
      more = false;
    }
    for (const std::string& p : packets) {
      size_t off = 0;
      do {  // Once for an empty packet.
        size_t n = std::min(p.size() - off, kReadBuffersSliceBytes);
        if (frame_bytes > 0 && frame_bytes + n > kReadBuffersSliceBytes) {
          channel_->Send(reply);
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
    if (!more) {
      rb->set_last(true);
      channel_->Send(reply);
      return FinishRead();
    }
    // What this read gave goes out now, so that the queue check above sees it.
    if (frame_bytes > 0) {
      channel_->Send(reply);
      rb->clear_slices();
      frame_bytes = 0;
    }
  }
}

void IpcConsumerPort::FinishRead() {
  reading_ = false;
  while (!reading_ && !closing_ && !deferred_requests_.empty()) {
    std::string frame = std::move(deferred_requests_.front());
    deferred_requests_.pop_front();
    HandleFrame(frame);
  }
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

void IpcConsumerPort::OnCloneTriggerHit(const std::string& trigger_name) {
  protos::ServiceToConsumer msg;
  msg.set_request_id(0);
  msg.mutable_clone_trigger_hit()->set_trigger_name(trigger_name);
  channel_->Send(msg);
}

void IpcConsumerPort::OnAllDataSourcesStarted() {
  protos::ServiceToConsumer msg;
  msg.set_request_id(0);
  msg.mutable_all_data_sources_started();
  channel_->Send(msg);
}

void IpcConsumerPort::OnTraceFileFinished(const std::string& name) {
  protos::ServiceToConsumer msg;
  msg.set_request_id(0);
  msg.mutable_trace_file_finished()->set_name(name);
  channel_->Send(msg);
}

void IpcConsumerPort::OnTracingDisabled(const std::string& error) {
  protos::ServiceToConsumer msg;
  msg.set_request_id(0);
  msg.mutable_tracing_disabled()->set_error(error);
  channel_->Send(msg);
}

}  // namespace sluice
