// The client half of Perfetto's IPC, as small as the tests need: the frames
// a Perfetto producer sends (BindService, InvokeMethod) and the decoding of
// what the service answers. Upstream's client (its ipc/ client_impl) does the
// same with callbacks; these tests drive each step themselves.
#ifndef SLUICE_TESTS_SERVICE_IPC_PERFETTO_IPC_TEST_CLIENT_H_
#define SLUICE_TESTS_SERVICE_IPC_PERFETTO_IPC_TEST_CLIENT_H_

#include <cstdint>
#include <map>
#include <string>

#include "perfetto/ipc/wire_protocol.pb.h"

namespace sluice::testing {

class PerfettoIpcTestClient {
 public:
  // The BindService frame for `service`.
  std::string Bind(const std::string& service) {
    perfetto::protos::IPCFrame f;
    f.set_request_id(++last_request_id_);
    f.mutable_msg_bind_service()->set_service_name(service);
    return f.SerializeAsString();
  }

  // Takes the methods from a BindServiceReply; false if it is not a
  // successful one.
  bool TakeBindReply(const perfetto::protos::IPCFrame& reply) {
    if (!reply.has_msg_bind_service_reply() || !reply.msg_bind_service_reply().success())
      return false;
    service_id_ = reply.msg_bind_service_reply().service_id();
    for (const auto& m : reply.msg_bind_service_reply().methods()) methods_[m.name()] = m.id();
    return true;
  }

  // An InvokeMethod frame calling `method` with `args`; *request_id gets its
  // id. An unknown method name gets id 0 (the service rejects it).
  template <typename Args>
  std::string Invoke(const std::string& method, const Args& args, uint64_t* request_id = nullptr,
                     bool drop_reply = false) {
    perfetto::protos::IPCFrame f;
    f.set_request_id(++last_request_id_);
    if (request_id) *request_id = last_request_id_;
    auto* invoke = f.mutable_msg_invoke_method();
    invoke->set_service_id(service_id_);
    auto it = methods_.find(method);
    invoke->set_method_id(it == methods_.end() ? 0 : it->second);
    args.SerializeToString(invoke->mutable_args_proto());
    if (drop_reply) invoke->set_drop_reply(true);
    return f.SerializeAsString();
  }

  // The reply of an InvokeMethodReply frame, parsed into *out; false if the
  // frame is not a successful reply.
  template <typename Reply>
  static bool ParseReply(const perfetto::protos::IPCFrame& frame, Reply* out) {
    return frame.has_msg_invoke_method_reply() && frame.msg_invoke_method_reply().success() &&
           out->ParseFromString(frame.msg_invoke_method_reply().reply_proto());
  }

  const std::map<std::string, uint32_t>& methods() const { return methods_; }

 private:
  uint64_t last_request_id_ = 0;
  uint32_t service_id_ = 0;
  std::map<std::string, uint32_t> methods_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_SERVICE_IPC_PERFETTO_IPC_TEST_CLIENT_H_
