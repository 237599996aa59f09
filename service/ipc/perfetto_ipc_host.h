// PerfettoIpcHost: the envelope of Perfetto's IPC (IPCFrame,
// protos/perfetto/ipc/wire_protocol.proto) on one connection of sluiced,
// for one service (ProducerPort or ConsumerPort). The port that owns it
// (perfetto_producer_port.h) implements the service's methods.
//
// A Perfetto client first binds the service by name; the host answers with
// the service's id (always 1: one service per connection) and the ids of its
// methods (their index in the list given at construction, from 1). Then each
// InvokeMethod names a method by id; the host hands the port the call, and
// the port answers through Reply (once, or many times for a streaming
// method). A client that binds another service is told it does not exist
// (success = false); one that calls an unbound service or an unknown method
// gets a failed reply, and the port counts a violation.
//
// Frames use sluice's framing (4-byte length, service/ipc/ipc_frame.h), so
// the same sockets take both protocols: IsPerfettoIpcFrame tells them apart
// on a connection's first frame (docs/IPC.md, "Perfetto's IPC").
//
// Everything from the client is untrusted. Service thread only.
#ifndef SLUICE_SERVICE_IPC_PERFETTO_IPC_HOST_H_
#define SLUICE_SERVICE_IPC_PERFETTO_IPC_HOST_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "perfetto/ipc/wire_protocol.pb.h"

namespace google::protobuf {
class MessageLite;
}

namespace sluice {

class IpcChannel;

// True if `frame` (a connection's first) is a Perfetto BindService. sluice's
// own first frames never are: none of its envelopes has a varint field 2,
// and Perfetto's clients always number their requests (field 2).
bool IsPerfettoIpcFrame(std::string_view frame);

class PerfettoIpcHost {
 public:
  static constexpr uint32_t kServiceId = 1;

  // One call of a method of the bound service.
  struct Call {
    uint64_t request_id = 0;
    size_t method = 0;       // Index into the method names given at construction.
    std::string_view args;   // The serialized request; valid until the next Decode.
    bool drop_reply = false;
  };

  enum class Decoded {
    kCall,       // *call is a call of the service's method.
    kHandled,    // Answered here (BindService), or nothing to do.
    kRejected,   // A call the service does not have: answered as failed; *error says why.
    kBroken,     // Not an IPCFrame: the caller closes the connection; *error says why.
  };

  PerfettoIpcHost(IpcChannel* channel, std::string service_name,
                  std::vector<std::string> method_names);

  Decoded Decode(std::string_view frame, Call* call, std::string* error);

  // Parses a call's arguments into *args; if they do not parse, answers the
  // call as failed and returns false.
  bool ParseArgs(const Call& call, google::protobuf::MessageLite* args);
  // The call, kept to be answered later: its arguments are gone by then.
  static Call Kept(const Call& call) {
    Call kept = call;
    kept.args = {};
    return kept;
  }

  // Answers `call` with `response` (nothing if the client asked for no
  // reply). has_more: a later Reply answers the same call again (streaming).
  // `fd` (if >= 0) travels with the frame.
  void Reply(const Call& call, const google::protobuf::MessageLite& response,
             bool has_more = false, int fd = -1);
  // Answers request `request_id` as failed.
  void Fail(uint64_t request_id);

  bool bound() const { return bound_; }

 private:
  void SendReply(uint64_t request_id, bool success, const google::protobuf::MessageLite* response,
                 bool has_more, int fd);

  IpcChannel* const channel_;
  const std::string service_name_;
  const std::vector<std::string> method_names_;
  perfetto::protos::IPCFrame frame_;  // The last decoded: Call::args points into it.
  bool bound_ = false;
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_PERFETTO_IPC_HOST_H_
