// PerfettoProducerPort: the service's side of a producer that speaks
// Perfetto's IPC (upstream's traced_probes, apps built with the Perfetto
// SDK's system backend). It serves Perfetto's "ProducerPort" service
// (protos/perfetto/ipc/producer_port.proto) by translating each call into
// the sluice message that means the same and handing it to an
// IpcProducerPort, and each of that port's messages back into Perfetto's
// reply or command. So a Perfetto producer is held to exactly the rules of
// a sluice one (admission, violations, flush timeouts, a producer that does
// not read its socket, losses counted at disconnect): the rules live in one
// place, IpcProducerPort.
//
// The two protocols differ in a few places; how each is bridged:
//  - The SMB. sluice sends it with InitializeConnection's answer; Perfetto
//    sends it as the first command on the producer's command stream
//    (GetAsyncCommand: SetupTracing), so the fd waits for the stream. A
//    producer that made its own SMB (producer_provided_shmem) sends it with
//    InitializeConnection and the service maps it (sealed memfds only).
//  - Commands. Perfetto's come as replies to the one GetAsyncCommand call,
//    each with has_more set; those issued before the producer opened that
//    stream wait for it (at most kMaxCommandsBeforeStream).
//  - Flush answers. A Perfetto producer answers a flush with a CommitData
//    that carries the flush id, and nothing more; here that commit is also
//    the flush's completion.
//  - Patches. The service tells the producer it may not patch the SMB
//    itself (direct_smb_patching_supported = false): patches come in
//    CommitData, where the service checks them.
//
// Service thread only.
#ifndef SLUICE_SERVICE_IPC_PERFETTO_PRODUCER_PORT_H_
#define SLUICE_SERVICE_IPC_PERFETTO_PRODUCER_PORT_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "perfetto/ipc/producer_port.pb.h"
#include "service/ipc/forwarding_channel.h"
#include "service/ipc/ipc_connection.h"
#include "service/ipc/ipc_producer_port.h"
#include "service/ipc/perfetto_ipc_host.h"
#include "sluice/ipc.pb.h"

namespace sluice {

class ProducerHost;

class PerfettoProducerPort : public IpcFrameHandler, private ForwardingChannel {
 public:
  static constexpr char kServiceName[] = "ProducerPort";
  static constexpr size_t kMaxCommandsBeforeStream = 256;
  static constexpr size_t kMaxPendingTriggerCalls = 64;

  PerfettoProducerPort(ProducerHost* service, IpcChannel* channel);
  ~PerfettoProducerPort() override;

  // IpcFrameHandler.
  void OnFrame(std::string_view frame) override;
  void OnPeerNotReading() override { port_.OnPeerNotReading(); }

  const IpcProducerPort& sluice_port() const { return port_; }

 private:
  struct PendingCommand {
    perfetto::protos::GetAsyncCommandResponse command;
    ScopedFd fd;
  };

  void HandleCall(const PerfettoIpcHost::Call& call);
  // Parses a call's arguments; a failure counts a violation and fails the call.
  bool ParseArgs(const PerfettoIpcHost::Call& call, google::protobuf::MessageLite* args);
  // Hands msg_ to the sluice port and answers the call with an empty
  // `response` unless the port closed the connection.
  void Forward(const PerfettoIpcHost::Call& call, const google::protobuf::MessageLite& response);
  void SendCommand(const perfetto::protos::GetAsyncCommandResponse& command, int fd = -1);

  // IpcChannel, as the sluice port sees it: its ServiceToProducer messages
  // become Perfetto replies and commands on the real channel.
  void Send(const google::protobuf::MessageLite& envelope, int fd = -1) override;

  PerfettoIpcHost host_;
  protos::ProducerToService msg_;  // Scratch: reused for every call.
  std::optional<PerfettoIpcHost::Call> init_call_;    // InitializeConnection, until answered.
  std::optional<PerfettoIpcHost::Call> command_stream_;  // GetAsyncCommand, once called.
  std::deque<PendingCommand> commands_before_stream_;
  std::deque<PerfettoIpcHost::Call> trigger_calls_;  // ActivateTriggers, until answered.
  // Last: destroyed first, so that what it sends while disconnecting finds
  // the members above alive.
  IpcProducerPort port_;
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_PERFETTO_PRODUCER_PORT_H_
