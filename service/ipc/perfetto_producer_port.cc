#include "service/ipc/perfetto_producer_port.h"

#include <fcntl.h>

#include <utility>

#include "perfetto/ipc/producer_port.pb.h"
#include "service/ipc/ipc_frame.h"
#include "service/ipc/ipc_producer_protocol.h"
#include "service/producer_host.h"

namespace sluice {
namespace {

namespace pp = perfetto::protos;

// The methods of upstream's ProducerPort, in the order of its service
// definition; a method's id is its index here plus one.
enum Method : size_t {
  kInitializeConnection,
  kRegisterDataSource,
  kUnregisterDataSource,
  kCommitData,
  kGetAsyncCommand,
  kRegisterTraceWriter,
  kUnregisterTraceWriter,
  kNotifyDataSourceStarted,
  kNotifyDataSourceStopped,
  kActivateTriggers,
  kSync,
  kUpdateDataSource,
};

std::vector<std::string> MethodNames() {
  return {"InitializeConnection",    "RegisterDataSource",      "UnregisterDataSource",
          "CommitData",              "GetAsyncCommand",         "RegisterTraceWriter",
          "UnregisterTraceWriter",   "NotifyDataSourceStarted", "NotifyDataSourceStopped",
          "ActivateTriggers",        "Sync",                    "UpdateDataSource"};
}

}  // namespace

PerfettoProducerPort::PerfettoProducerPort(ProducerHost* service, IpcChannel* channel)
    : ForwardingChannel(channel), host_(channel, kServiceName, MethodNames()), port_(service, this) {}

PerfettoProducerPort::~PerfettoProducerPort() = default;

void PerfettoProducerPort::OnFrame(std::string_view frame) {
  if (port_.closing()) return;
  PerfettoIpcHost::Call call;
  std::string error;
  switch (host_.Decode(frame, &call, &error)) {
    case PerfettoIpcHost::Decoded::kCall:
      return HandleCall(call);
    case PerfettoIpcHost::Decoded::kHandled:
      return;
    case PerfettoIpcHost::Decoded::kRejected:
      return port_.Violation("Perfetto IPC: bad call");
    case PerfettoIpcHost::Decoded::kBroken:
      return port_.Refuse("Perfetto producer sent " + error);
  }
}

bool PerfettoProducerPort::ParseArgs(const PerfettoIpcHost::Call& call,
                                     google::protobuf::MessageLite* args) {
  if (host_.ParseArgs(call, args)) return true;
  port_.Violation("Perfetto IPC: arguments that do not parse");
  return false;
}

void PerfettoProducerPort::Forward(const PerfettoIpcHost::Call& call,
                                   const google::protobuf::MessageLite& response) {
  port_.HandleMessage(msg_);
  if (!port_.closing()) host_.Reply(call, response);
}

void PerfettoProducerPort::HandleCall(const PerfettoIpcHost::Call& call) {
  msg_.Clear();
  switch (static_cast<Method>(call.method)) {
    case kInitializeConnection: {
      pp::InitializeConnectionRequest req;
      if (!ParseArgs(call, &req)) return;
      if (init_call_ || port_.initialized()) {
        if (!call.drop_reply) host_.Fail(call.request_id);
        return port_.Violation("second InitializeConnection");
      }
      auto* init = msg_.mutable_initialize_connection();
      init->set_producer_name(req.producer_name());
      init->set_shm_size_hint_bytes(req.shared_memory_size_hint_bytes());
      init->set_shm_page_size_hint_bytes(req.shared_memory_page_size_hint_bytes());
      init->set_protocol_version(kIpcVersion);
      init->set_producer_provided_shm(req.producer_provided_shmem());
      init_call_ = PerfettoIpcHost::Kept(call);
      port_.HandleMessage(msg_);  // Answered in Send.
      return;
    }
    case kRegisterDataSource: {
      pp::RegisterDataSourceRequest req;
      if (!ParseArgs(call, &req)) return;
      const auto& d = req.data_source_descriptor();
      auto* r = msg_.mutable_register_data_source();
      r->set_name(d.name());
      r->set_will_notify_on_start(d.will_notify_on_start());
      r->set_will_notify_on_stop(d.will_notify_on_stop());
      r->set_handles_incremental_state_clear(d.handles_incremental_state_clear());
      return Forward(call, pp::RegisterDataSourceResponse());
    }
    case kUnregisterDataSource: {
      pp::UnregisterDataSourceRequest req;
      if (!ParseArgs(call, &req)) return;
      msg_.mutable_unregister_data_source()->set_name(req.data_source_name());
      return Forward(call, pp::UnregisterDataSourceResponse());
    }
    case kCommitData: {
      // Upstream's CommitDataRequest and sluice's share their field numbers
      // (ipc.proto): the arguments parse straight into the sluice message.
      // Upstream's fields sluice lacks (chunk contents over the socket, for
      // shared-memory emulation, which the service never offers) stay
      // unknown.
      if (!ParseArgs(call, msg_.mutable_commit_data())) return;
      const uint64_t flush_id = msg_.commit_data().flush_request_id();
      port_.HandleMessage(msg_);
      if (flush_id != 0 && !port_.closing()) {
        msg_.Clear();
        msg_.mutable_notify_flush_complete()->set_flush_request_id(flush_id);
        port_.HandleMessage(msg_);
      }
      if (!port_.closing()) host_.Reply(call, pp::CommitDataResponse());
      return;
    }
    case kGetAsyncCommand: {
      if (command_stream_) {
        if (!call.drop_reply) host_.Fail(call.request_id);
        return port_.Violation("second GetAsyncCommand");
      }
      command_stream_ = PerfettoIpcHost::Kept(call);
      while (!commands_before_stream_.empty()) {
        const PendingCommand& c = commands_before_stream_.front();
        host_.Reply(*command_stream_, c.command, /*has_more=*/true, c.fd.get());
        commands_before_stream_.pop_front();
      }
      return;
    }
    case kRegisterTraceWriter:
    case kUnregisterTraceWriter: {
      uint32_t writer_id = 0, target_buffer = 0;
      if (call.method == kRegisterTraceWriter) {
        pp::RegisterTraceWriterRequest req;
        if (!ParseArgs(call, &req)) return;
        writer_id = req.trace_writer_id();
        target_buffer = req.target_buffer();
      } else {
        pp::UnregisterTraceWriterRequest req;
        if (!ParseArgs(call, &req)) return;
        writer_id = req.trace_writer_id();
      }
      if (writer_id == 0 || writer_id > 0xffff) {
        if (!call.drop_reply) host_.Fail(call.request_id);
        return port_.Violation("writer id out of range");
      }
      if (call.method == kRegisterTraceWriter) {
        SetRegisterTraceWriter(&msg_, static_cast<uint16_t>(writer_id), target_buffer);
        return Forward(call, pp::RegisterTraceWriterResponse());
      }
      SetUnregisterTraceWriter(&msg_, static_cast<uint16_t>(writer_id));
      return Forward(call, pp::UnregisterTraceWriterResponse());
    }
    case kNotifyDataSourceStarted: {
      pp::NotifyDataSourceStartedRequest req;
      if (!ParseArgs(call, &req)) return;
      msg_.mutable_data_source_started()->set_data_source_id(req.data_source_id());
      return Forward(call, pp::NotifyDataSourceStartedResponse());
    }
    case kNotifyDataSourceStopped: {
      pp::NotifyDataSourceStoppedRequest req;
      if (!ParseArgs(call, &req)) return;
      msg_.mutable_data_source_stopped()->set_data_source_id(req.data_source_id());
      return Forward(call, pp::NotifyDataSourceStoppedResponse());
    }
    case kActivateTriggers: {
      pp::ActivateTriggersRequest req;
      if (!ParseArgs(call, &req)) return;
      if (trigger_calls_.size() >= kMaxPendingTriggerCalls) {
        if (!call.drop_reply) host_.Fail(call.request_id);
        return port_.Violation("too many ActivateTriggers unanswered");
      }
      for (const std::string& name : req.trigger_names())
        msg_.mutable_activate_triggers()->add_trigger_names(name);
      trigger_calls_.push_back(PerfettoIpcHost::Kept(call));
      port_.HandleMessage(msg_);  // Answered in Send.
      return;
    }
    case kSync:
      // Calls are handled in order, each to its end: everything the
      // producer sent before is handled by now.
      host_.Reply(call, pp::SyncResponse());
      return;
    case kUpdateDataSource: {
      // The service keeps no more of a descriptor than its flags, which an
      // update may not change (upstream neither); its answer is all there is.
      pp::UpdateDataSourceRequest req;
      if (!ParseArgs(call, &req)) return;
      host_.Reply(call, pp::UpdateDataSourceResponse());
      return;
    }
  }
}

void PerfettoProducerPort::SendCommand(const pp::GetAsyncCommandResponse& command, int fd) {
  if (command_stream_) return host_.Reply(*command_stream_, command, /*has_more=*/true, fd);
  if (commands_before_stream_.size() >= kMaxCommandsBeforeStream) {
    if (!port_.closing()) port_.Refuse("Perfetto producer never opened its command stream (GetAsyncCommand)");
    return;
  }
  PendingCommand pending;
  pending.command = command;
  if (fd >= 0) pending.fd.reset(fcntl(fd, F_DUPFD_CLOEXEC, 0));
  commands_before_stream_.push_back(std::move(pending));
}

void PerfettoProducerPort::Send(const google::protobuf::MessageLite& envelope, int fd) {
  // The sluice port sends nothing but ServiceToProducer.
  const auto& msg = static_cast<const protos::ServiceToProducer&>(envelope);
  switch (msg.msg_case()) {
    case protos::ServiceToProducer::kInitializeConnectionResponse: {
      const auto& r = msg.initialize_connection_response();
      if (!init_call_) return;
      const PerfettoIpcHost::Call call = *init_call_;
      init_call_.reset();
      if (r.has_error()) {
        // Perfetto's answer has no room for the reason: the client sees a
        // failed call and the socket closing; sluiced's log has why.
        if (!call.drop_reply) host_.Fail(call.request_id);
        return;
      }
      pp::InitializeConnectionResponse response;
      response.set_using_shmem_provided_by_producer(r.using_producer_shm());
      response.set_direct_smb_patching_supported(false);
      host_.Reply(call, response);
      pp::GetAsyncCommandResponse setup;
      setup.mutable_setup_tracing()->set_shared_buffer_page_size_kb(r.shm_page_size_bytes() / 1024);
      return SendCommand(setup, r.using_producer_shm() ? -1 : fd);
    }
    case protos::ServiceToProducer::kSetupDataSource: {
      pp::GetAsyncCommandResponse command;
      auto* c = command.mutable_setup_data_source();
      c->set_new_instance_id(msg.setup_data_source().data_source_id());
      *c->mutable_config() = msg.setup_data_source().config();
      return SendCommand(command);
    }
    case protos::ServiceToProducer::kStartDataSource: {
      pp::GetAsyncCommandResponse command;
      auto* c = command.mutable_start_data_source();
      c->set_new_instance_id(msg.start_data_source().data_source_id());
      *c->mutable_config() = msg.start_data_source().config();
      return SendCommand(command);
    }
    case protos::ServiceToProducer::kStopDataSource: {
      pp::GetAsyncCommandResponse command;
      command.mutable_stop_data_source()->set_instance_id(msg.stop_data_source().data_source_id());
      return SendCommand(command);
    }
    case protos::ServiceToProducer::kFlush: {
      pp::GetAsyncCommandResponse command;
      auto* c = command.mutable_flush();
      c->set_request_id(msg.flush().flush_request_id());
      for (uint64_t id : msg.flush().data_source_ids()) c->add_data_source_ids(id);
      return SendCommand(command);
    }
    case protos::ServiceToProducer::kClearIncrementalState: {
      pp::GetAsyncCommandResponse command;
      auto* c = command.mutable_clear_incremental_state();
      for (uint64_t id : msg.clear_incremental_state().data_source_ids()) c->add_data_source_ids(id);
      return SendCommand(command);
    }
    case protos::ServiceToProducer::kActivateTriggersResponse:
      if (trigger_calls_.empty()) return;
      host_.Reply(trigger_calls_.front(), pp::ActivateTriggersResponse());
      trigger_calls_.pop_front();
      return;
    case protos::ServiceToProducer::MSG_NOT_SET:
      return;
  }
}

}  // namespace sluice
