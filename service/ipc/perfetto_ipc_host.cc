#include "service/ipc/perfetto_ipc_host.h"

#include <utility>

#include "service/ipc/ipc_connection.h"

namespace sluice {

bool IsPerfettoIpcFrame(std::string_view frame) {
  perfetto::protos::IPCFrame f;
  return f.ParseFromArray(frame.data(), static_cast<int>(frame.size())) && f.has_request_id() &&
         f.has_msg_bind_service();
}

PerfettoIpcHost::PerfettoIpcHost(IpcChannel* channel, std::string service_name,
                                 std::vector<std::string> method_names)
    : channel_(channel),
      service_name_(std::move(service_name)),
      method_names_(std::move(method_names)) {}

PerfettoIpcHost::Decoded PerfettoIpcHost::Decode(std::string_view frame, Call* call,
                                                 std::string* error) {
  if (!frame_.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
    *error = "a frame that is not a Perfetto IPCFrame";
    return Decoded::kBroken;
  }
  const uint64_t request_id = frame_.request_id();
  switch (frame_.msg_case()) {
    case perfetto::protos::IPCFrame::kMsgBindService: {
      perfetto::protos::IPCFrame reply;
      reply.set_request_id(request_id);
      auto* bind = reply.mutable_msg_bind_service_reply();
      if (frame_.msg_bind_service().service_name() != service_name_) {
        bind->set_success(false);
        channel_->Send(reply);
        *error = "bind of service '" + frame_.msg_bind_service().service_name().substr(0, 64) +
                 "', which this socket does not serve (it serves " + service_name_ + ")";
        return Decoded::kRejected;
      }
      bound_ = true;
      bind->set_success(true);
      bind->set_service_id(kServiceId);
      for (size_t i = 0; i < method_names_.size(); i++) {
        auto* m = bind->add_methods();
        m->set_id(static_cast<uint32_t>(i + 1));
        m->set_name(method_names_[i]);
      }
      channel_->Send(reply);
      return Decoded::kHandled;
    }
    case perfetto::protos::IPCFrame::kMsgInvokeMethod: {
      const auto& invoke = frame_.msg_invoke_method();
      const uint32_t method = invoke.method_id();
      if (!bound_ || invoke.service_id() != kServiceId || method == 0 ||
          method > method_names_.size()) {
        if (!invoke.drop_reply()) Fail(request_id);
        *error = !bound_ ? "a call before BindService"
                         : "a call of service " + std::to_string(invoke.service_id()) +
                               " method " + std::to_string(method) + ", which do not exist";
        return Decoded::kRejected;
      }
      call->request_id = request_id;
      call->method = method - 1;
      call->args = invoke.args_proto();
      call->drop_reply = invoke.drop_reply();
      return Decoded::kCall;
    }
    case perfetto::protos::IPCFrame::kSetPeerIdentity:
      // Only a relay sends it, for the clients behind it; sluiced goes by the
      // socket's credentials.
      return Decoded::kHandled;
    default:
      *error = "an IPCFrame that is neither BindService nor InvokeMethod";
      return Decoded::kRejected;
  }
}

bool PerfettoIpcHost::ParseArgs(const Call& call, google::protobuf::MessageLite* args) {
  if (args->ParseFromArray(call.args.data(), static_cast<int>(call.args.size()))) return true;
  if (!call.drop_reply) Fail(call.request_id);
  return false;
}

void PerfettoIpcHost::Reply(const Call& call, const google::protobuf::MessageLite& response,
                            bool has_more, int fd) {
  if (call.drop_reply) return;
  SendReply(call.request_id, true, &response, has_more, fd);
}

void PerfettoIpcHost::Fail(uint64_t request_id) { SendReply(request_id, false, nullptr, false, -1); }

void PerfettoIpcHost::SendReply(uint64_t request_id, bool success,
                                const google::protobuf::MessageLite* response, bool has_more,
                                int fd) {
  perfetto::protos::IPCFrame reply;
  reply.set_request_id(request_id);
  auto* r = reply.mutable_msg_invoke_method_reply();
  r->set_success(success);
  if (has_more) r->set_has_more(true);
  if (response) response->SerializeToString(r->mutable_reply_proto());
  channel_->Send(reply, fd);
}

}  // namespace sluice
