#include "service/ipc/perfetto_consumer_port.h"

#include <utility>
#include <vector>

#include "perfetto/ipc/consumer_port.pb.h"
#include "service/tracing_service.h"

namespace sluice {
namespace {

namespace pp = perfetto::protos;

// The methods of upstream's ConsumerPort, in the order of its service
// definition; a method's id is its index here plus one.
enum Method : size_t {
  kEnableTracing,
  kDisableTracing,
  kReadBuffers,
  kFreeBuffers,
  kFlush,
  kStartTracing,
  kChangeTraceConfig,
  kDetach,
  kAttach,
  kGetTraceStats,
  kObserveEvents,
  kQueryServiceState,
  kQueryCapabilities,
  kSaveTraceForBugreport,
  kCloneSession,
};

std::vector<std::string> MethodNames() {
  return {"EnableTracing",     "DisableTracing",    "ReadBuffers",          "FreeBuffers",
          "Flush",             "StartTracing",      "ChangeTraceConfig",    "Detach",
          "Attach",            "GetTraceStats",     "ObserveEvents",        "QueryServiceState",
          "QueryCapabilities", "SaveTraceForBugreport", "CloneSession"};
}

}  // namespace

PerfettoConsumerPort::PerfettoConsumerPort(TracingService* service, IpcChannel* channel)
    : ForwardingChannel(channel),
      service_(service),
      host_(channel, kServiceName, MethodNames()),
      port_(service, this) {}

PerfettoConsumerPort::~PerfettoConsumerPort() = default;

void PerfettoConsumerPort::OnFrame(std::string_view frame) {
  if (closing_) return;
  PerfettoIpcHost::Call call;
  std::string error;
  switch (host_.Decode(frame, &call, &error)) {
    case PerfettoIpcHost::Decoded::kCall:
      return HandleCall(call);
    case PerfettoIpcHost::Decoded::kHandled:
    case PerfettoIpcHost::Decoded::kRejected:  // Answered as failed; the client goes on.
      return;
    case PerfettoIpcHost::Decoded::kBroken:
      closing_ = true;
      service_->CountDroppedIpcConnection();
      return channel_->Close("Perfetto consumer sent " + error);
  }
}

void PerfettoConsumerPort::Refuse(const PerfettoIpcHost::Call& call, const std::string& why) {
  // Perfetto's failed reply has no room for the reason: it goes to the log.
  if (service_->options().log) service_->options().log("sluiced: Perfetto consumer: " + why);
  host_.Fail(call.request_id);
}

void PerfettoConsumerPort::Forward(const PerfettoIpcHost::Call& call,
                                   protos::ConsumerToService* request) {
  if (pending_.size() >= kMaxPendingCalls) {
    closing_ = true;
    service_->CountDroppedIpcConnection();
    return channel_->Close("Perfetto consumer has " + std::to_string(kMaxPendingCalls) +
                           " calls unanswered");
  }
  request->set_request_id(++last_request_id_);
  pending_[last_request_id_] = PerfettoIpcHost::Kept(call);
  port_.OnFrame(request->SerializeAsString());
}

void PerfettoConsumerPort::HandleCall(const PerfettoIpcHost::Call& call) {
  protos::ConsumerToService request;
  switch (static_cast<Method>(call.method)) {
    case kEnableTracing: {
      pp::EnableTracingRequest req;
      if (!host_.ParseArgs(call, &req)) return;
      if (enable_call_) return Refuse(call, "a second EnableTracing on one connection");
      if (req.attach_notification_only()) {
        enable_call_ = PerfettoIpcHost::Kept(call);  // Answered when the attached session ends.
        return;
      }
      *request.mutable_enable_tracing()->mutable_trace_config() = req.trace_config();
      return Forward(call, &request);
    }
    case kDisableTracing:
      request.mutable_disable_tracing();
      return Forward(call, &request);
    case kReadBuffers:
      request.mutable_read_buffers();
      return Forward(call, &request);
    case kFreeBuffers:
      request.mutable_free_buffers();
      return Forward(call, &request);
    case kFlush: {
      pp::FlushRequest req;
      if (!host_.ParseArgs(call, &req)) return;
      request.mutable_flush()->set_timeout_ms(req.timeout_ms());
      return Forward(call, &request);
    }
    case kStartTracing:
      request.mutable_start_tracing();
      return Forward(call, &request);
    case kChangeTraceConfig:
      return Refuse(call, "ChangeTraceConfig is not supported: start a new session");
    case kDetach: {
      pp::DetachRequest req;
      if (!host_.ParseArgs(call, &req)) return;
      request.mutable_detach()->set_key(req.key());
      return Forward(call, &request);
    }
    case kAttach: {
      pp::AttachRequest req;
      if (!host_.ParseArgs(call, &req)) return;
      request.mutable_attach()->set_key(req.key());
      return Forward(call, &request);
    }
    case kGetTraceStats:
      request.mutable_get_trace_stats();
      return Forward(call, &request);
    case kObserveEvents: {
      pp::ObserveEventsRequest req;
      if (!host_.ParseArgs(call, &req)) return;
      if (observe_call_) return Refuse(call, "a second ObserveEvents on one connection");
      observe_call_ = PerfettoIpcHost::Kept(call);  // A stream, answered as events come.
      for (int type : req.events_to_observe())
        observe_all_started_ |= type == pp::ObservableEvents::TYPE_ALL_DATA_SOURCES_STARTED;
      if (all_started_) AnswerAllStarted();
      return;
    }
    case kQueryServiceState:
      request.mutable_query_service_state();
      return Forward(call, &request);
    case kQueryCapabilities: {
      pp::QueryCapabilitiesResponse response;
      auto* c = response.mutable_capabilities();
      c->set_has_query_capabilities(true);
      c->add_observable_events(pp::ObservableEvents::TYPE_CLONE_TRIGGER_HIT);
      c->add_observable_events(pp::ObservableEvents::TYPE_ALL_DATA_SOURCES_STARTED);
      c->set_has_trace_config_output_path(true);
      c->set_has_clone_session(true);
      host_.Reply(call, response);
      return;
    }
    case kSaveTraceForBugreport: {
      pp::SaveTraceForBugreportResponse response;
      response.set_success(false);
      response.set_msg("sluiced keeps no bugreport session: clone one with --clone-by-name");
      host_.Reply(call, response);
      return;
    }
    case kCloneSession: {
      pp::CloneSessionRequest req;
      if (!host_.ParseArgs(call, &req)) return;
      // The output file upstream's `perfetto` sends with every clone: the
      // clone is read back instead.
      (void)channel_->TakeReceivedFd();
      // By name (--clone-by-name), or by id (--clone ID: "#ID" names a
      // session by its id in sluiced, `sluice sessions` lists them).
      request.mutable_clone_session()->set_key(req.has_session_id() ? "#" + std::to_string(req.session_id())
                                                                     : req.unique_session_name());
      return Forward(call, &request);
    }
  }
}

void PerfettoConsumerPort::AnswerAllStarted() {
  if (!observe_call_ || !observe_all_started_) return;
  pp::ObserveEventsResponse response;
  response.mutable_events()->set_all_data_sources_started(true);
  host_.Reply(*observe_call_, response, /*has_more=*/true);
  observe_all_started_ = false;  // Once.
}

void PerfettoConsumerPort::AnswerEnableTracing(const std::string& error) {
  if (!enable_call_) return;
  pp::EnableTracingResponse response;
  response.set_disabled(true);
  if (!error.empty()) response.set_error(error);
  host_.Reply(*enable_call_, response);
  enable_call_.reset();
}

bool PerfettoConsumerPort::Answer(const PerfettoIpcHost::Call& call,
                                  const protos::ServiceToConsumer& msg) {
  if (!msg.error().empty()) {
    switch (static_cast<Method>(call.method)) {
      case kEnableTracing: {
        // The session never started: its end, with the reason.
        pp::EnableTracingResponse response;
        response.set_disabled(true);
        response.set_error(msg.error());
        host_.Reply(call, response);
        return true;
      }
      case kCloneSession: {
        pp::CloneSessionResponse response;
        response.set_success(false);
        response.set_error(msg.error());
        host_.Reply(call, response);
        return true;
      }
      default:
        Refuse(call, msg.error());
        return true;
    }
  }
  switch (msg.msg_case()) {
    case protos::ServiceToConsumer::kEnableTracing:
      enable_call_ = call;  // Answered at the end of the session.
      return true;
    case protos::ServiceToConsumer::kStartTracing:
      host_.Reply(call, pp::StartTracingResponse());
      return true;
    case protos::ServiceToConsumer::kFlush:
      if (msg.flush().success()) host_.Reply(call, pp::FlushResponse());
      else host_.Fail(call.request_id);
      return true;
    case protos::ServiceToConsumer::kDisableTracing:
      host_.Reply(call, pp::DisableTracingResponse());
      return true;
    case protos::ServiceToConsumer::kReadBuffers: {
      pp::ReadBuffersResponse response;
      for (const auto& s : msg.read_buffers().slices()) {
        auto* slice = response.add_slices();
        slice->set_data(s.data());
        slice->set_last_slice_for_packet(s.last_slice_for_packet());
      }
      const bool last = msg.read_buffers().last();
      host_.Reply(call, response, /*has_more=*/!last);
      return last;
    }
    case protos::ServiceToConsumer::kGetTraceStats: {
      pp::GetTraceStatsResponse response;
      *response.mutable_trace_stats() = msg.get_trace_stats().trace_stats();
      host_.Reply(call, response);
      return true;
    }
    case protos::ServiceToConsumer::kFreeBuffers:
      host_.Reply(call, pp::FreeBuffersResponse());
      return true;
    case protos::ServiceToConsumer::kQueryServiceState: {
      const auto& s = msg.query_service_state();
      pp::QueryServiceStateResponse response;
      auto* state = response.mutable_service_state();
      for (const auto& p : s.producers()) {
        auto* producer = state->add_producers();
        producer->set_id(static_cast<int32_t>(p.id()));
        producer->set_name(p.name());
        producer->set_pid(p.pid());
        producer->set_uid(p.uid());
      }
      for (const auto& d : s.data_sources()) {
        auto* ds = state->add_data_sources();
        ds->set_producer_id(static_cast<int32_t>(d.producer_id()));
        ds->mutable_ds_descriptor()->set_name(d.name());
      }
      state->set_num_sessions(static_cast<int32_t>(s.num_sessions()));
      state->set_num_sessions_started(static_cast<int32_t>(s.num_sessions_started()));
      state->set_tracing_service_version(s.service_version());
      host_.Reply(call, response);
      return true;
    }
    case protos::ServiceToConsumer::kDetach:
      // The session is no longer this connection's: its end is heard by
      // whoever attaches (an attach on this connection asks again).
      enable_call_.reset();
      host_.Reply(call, pp::DetachResponse());
      return true;
    case protos::ServiceToConsumer::kAttach: {
      pp::AttachResponse response;
      *response.mutable_trace_config() = msg.attach().trace_config();
      host_.Reply(call, response);
      return true;
    }
    case protos::ServiceToConsumer::kCloneSession: {
      pp::CloneSessionResponse response;
      response.set_success(true);
      response.set_was_write_into_file(false);
      host_.Reply(call, response);
      return true;
    }
    default:
      host_.Fail(call.request_id);
      return true;
  }
}

void PerfettoConsumerPort::Send(const google::protobuf::MessageLite& envelope, int fd) {
  (void)fd;  // The sluice port attaches none to consumers.
  if (closing_) return;  // Answers of calls made before the connection was closed.
  // The sluice port sends nothing but ServiceToConsumer.
  const auto& msg = static_cast<const protos::ServiceToConsumer&>(envelope);
  if (msg.request_id() == 0) {  // A notification.
    if (msg.has_tracing_disabled()) return AnswerEnableTracing(msg.tracing_disabled().error());
    if (msg.has_all_data_sources_started()) {
      all_started_ = true;
      return AnswerAllStarted();
    }
    if (msg.has_clone_trigger_hit() && observe_call_) {
      pp::ObserveEventsResponse response;
      response.mutable_events()->mutable_clone_trigger_hit()->set_trigger_name(
          msg.clone_trigger_hit().trigger_name());
      host_.Reply(*observe_call_, response, /*has_more=*/true);
    }
    return;
  }
  auto it = pending_.find(msg.request_id());
  if (it == pending_.end()) return;
  const PerfettoIpcHost::Call call = it->second;
  if (Answer(call, msg)) pending_.erase(msg.request_id());
}

}  // namespace sluice
