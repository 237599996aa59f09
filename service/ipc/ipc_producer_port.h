// IpcProducerPort: the service's side of one producer socket. It turns
// ProducerToService frames into calls on a ProducerEndpoint obtained from
// TracingService::ConnectProducer, and implements Producer by sending
// ServiceToProducer frames. docs/IPC.md has the message flow.
//
// Protocol (everything from the producer is untrusted):
//  1. The first frame must be InitializeConnection. The service checks the
//     peer's uid (SO_PEERCRED) against the allowlist, creates the SMB and
//     answers InitializeConnectionResponse with the memfd (SCM_RIGHTS), or
//     with `error` and closes.
//  2. Then any ProducerToService message. Frames that do not parse close the
//     connection (counted as a dropped connection); messages that parse but
//     make no sense (a second InitializeConnection, an empty envelope, a bad
//     patch) count as violations, and kViolationsBeforeClose of them close it.
//     Chunk-level faults are counted by the service itself (abi_violations),
//     which disconnects through Producer::OnDisconnect.
//  3. When the socket closes, the ProducerEndpoint is destroyed: the
//     service scrapes the SMB's Complete chunks into the trace.
//
// A producer that does not read its socket is dropped, so that it costs the
// service bounded memory and no more waits: when a flush to it times out and
// it has not even read the Flush request (IpcChannel::PeerHasRead), or when
// the output queued for it passes the connection's bound. Both are counted
// (TracingService::CountProducerNotReading) before the connection closes.
// A producer that reads the Flush but does not answer is only a failed flush.
//
// Service thread only.
#ifndef SLUICE_SERVICE_IPC_IPC_PRODUCER_PORT_H_
#define SLUICE_SERVICE_IPC_IPC_PRODUCER_PORT_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "service/ipc/ipc_connection.h"
#include "service/service_endpoints.h"
#include "shm/commit_data.h"
#include "sluice/ipc.pb.h"

namespace sluice {

class ProducerHost;

class IpcProducerPort : public IpcFrameHandler, public Producer {
 public:
  static constexpr uint32_t kViolationsBeforeClose = 64;

  IpcProducerPort(ProducerHost* service, IpcChannel* channel);
  ~IpcProducerPort() override;

  // IpcFrameHandler.
  void OnFrame(std::string_view frame) override;
  // One message, already decoded: what OnFrame does after parsing. The
  // Perfetto producer port (perfetto_producer_port.h) translates Perfetto's
  // calls into these.
  void HandleMessage(const protos::ProducerToService& msg);

  // Producer: forwarded to the producer process.
  void SetupDataSource(DataSourceInstanceId id,
                       const perfetto::protos::DataSourceConfig& config) override;
  void StartDataSource(DataSourceInstanceId id,
                       const perfetto::protos::DataSourceConfig& config) override;
  void StopDataSource(DataSourceInstanceId id) override;
  void Flush(FlushRequestId id, const std::vector<DataSourceInstanceId>& instances) override;
  void ClearIncrementalState(const std::vector<DataSourceInstanceId>& instances) override;
  void OnFlushTimeout(FlushRequestId id) override;
  void OnDisconnect(const std::string& reason) override;
  void OnTriggersActivated(uint32_t sessions_triggered) override;
  // IpcFrameHandler: the connection's output queue is full.
  void OnPeerNotReading() override;

  bool initialized() const { return connection_ != nullptr; }
  uint32_t violations() const { return violations_; }
  bool closing() const { return closing_; }

  // Counts a message that made no sense; kViolationsBeforeClose close.
  void Violation(const char* what);
  // Counts a dropped connection and closes the channel.
  void Refuse(const std::string& reason);

 private:
  // The first frame: connect to the service and send the SMB.
  void Connect(const protos::InitializeConnection& init);
  // Registers or unregisters a trace writer if `msg` carries that; true if it
  // did (a malformed one counts a violation and returns false).
  bool HandleWriterEvent(const protos::ProducerToService& msg);
  void HandleRequest(const protos::ProducerToService& msg);
  // Counts the producer as not reading and closes the connection.
  void DropNotReading(const std::string& why);

  ProducerHost* const service_;
  IpcChannel* const channel_;
  std::unique_ptr<ProducerEndpoint> connection_;
  CommitDataRequest scratch_request_;  // Reused: no allocation per commit in steady state.
  // Flush request id -> number of the frame that carried it, until the
  // flush is answered or times out (the oldest go first past kMaxFlushFrames:
  // a producer answers or times out long before).
  static constexpr size_t kMaxFlushFrames = 1024;
  std::map<FlushRequestId, uint64_t> flush_frames_;
  uint32_t violations_ = 0;
  bool closing_ = false;
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_IPC_PRODUCER_PORT_H_
