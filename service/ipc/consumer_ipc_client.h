// ConsumerIpcClient: a consumer's connection to sluiced over the consumer
// socket; implements ConsumerEndpoint, so `sluice record --daemon` swaps
// it in for TracingService::ConnectConsumer().
//
// Synchronous and single-threaded: each call sends one request and reads
// frames until the answer with its request_id. A TracingDisabled
// notification read on the way is remembered for WaitForTracingDisabled.
// Every wait has a deadline, so a wedged daemon gives an error rather than a
// hang (kRequestTimeoutMs; Flush waits for its own timeout on top).
// If sluiced goes away (exits, is killed: the socket closes), every call and
// WaitForTracingDisabled return at once with an error saying so, and
// connection_lost() tells it apart from the session's own errors.
#ifndef SLUICE_SERVICE_IPC_CONSUMER_IPC_CLIENT_H_
#define SLUICE_SERVICE_IPC_CONSUMER_IPC_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "service/ipc/ipc_frame.h"
#include "service/ipc/ipc_socket.h"
#include "service/service_endpoints.h"

namespace sluice {
namespace protos {
class ConsumerToService;
class ServiceToConsumer;
}  // namespace protos

class ConsumerIpcClient : public ConsumerEndpoint {
 public:
  static constexpr uint32_t kRequestTimeoutMs = 30000;

  static StatusOr<std::unique_ptr<ConsumerIpcClient>> Connect(const std::string& socket_path);
  ~ConsumerIpcClient() override;

  Status EnableTracing(const perfetto::protos::TraceConfig& config, int output_fd = -1,
                       const SessionOptions& options = {}) override;
  Status StartTracing() override;
  StatusOr<bool> Flush(uint32_t timeout_ms = 0) override;
  Status DisableTracing() override;
  bool WaitForTracingDisabled(uint32_t timeout_ms, std::string* error = nullptr) override;
  std::vector<std::string> TakeCloneTriggers() override;
  std::vector<std::string> TakeFinishedFiles() override;
  void SetWaitInterruptFd(int fd) override { interrupt_fd_ = fd; }
  Status ReadBuffers(const std::function<void(std::string_view packet)>& on_packet) override;
  StatusOr<perfetto::protos::TraceStats> GetTraceStats() override;
  Status FreeBuffers() override;
  StatusOr<ServiceState> QueryServiceState() override;
  Status Detach(const std::string& key) override;
  StatusOr<AttachedSession> Attach(const std::string& key) override;
  StatusOr<SessionList> ListSessions() override;
  // Waits for the source's flush (its flush_timeout_ms, at most
  // kCloneFlushWaitMs) on top of kRequestTimeoutMs.
  StatusOr<CloneResult> CloneSession(const std::string& key) override;
  static constexpr uint32_t kCloneFlushWaitMs = 60000;

  // The socket closed or failed: sluiced exited or was killed (or dropped
  // this connection). Nothing more will come from it.
  bool connection_lost() const { return connection_lost_; }

 private:
  // Marks the connection lost and returns the error that says so.
  Status LoseConnection(int err);
  explicit ConsumerIpcClient(ScopedFd socket) : socket_(std::move(socket)) {}
  // Sends `request` (assigning its request_id) with an optional fd.
  Status SendRequest(protos::ConsumerToService* request, int fd = -1);
  // Reads frames until one answers `request_id`; notifications are recorded.
  Status ReadReply(uint64_t request_id, uint32_t timeout_ms, protos::ServiceToConsumer* reply);
  // Reads and handles one frame within timeout_ms; false on timeout.
  // One frame, within `timeout_ms` (kWaitForever: no limit); false without
  // one when the time is up or `interrupt_fd` is readable.
  StatusOr<bool> ReadOneFrame(uint32_t timeout_ms, protos::ServiceToConsumer* msg, int interrupt_fd = -1);
  Status Call(protos::ConsumerToService* request, protos::ServiceToConsumer* reply,
              uint32_t timeout_ms = kRequestTimeoutMs, int fd = -1);

  ScopedFd socket_;
  FrameReader reader_;
  uint64_t last_request_id_ = 0;
  bool disabled_ = false;
  std::string disabled_error_;
  int interrupt_fd_ = -1;  // SetWaitInterruptFd(); not owned.
  // CloneTriggerHit notifications read on the way, for TakeCloneTriggers.
  std::vector<std::string> clone_triggers_;
  // TraceFileFinished notifications read on the way, for TakeFinishedFiles.
  std::vector<std::string> finished_files_;
  bool broken_ = false;
  bool connection_lost_ = false;
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_CONSUMER_IPC_CLIENT_H_
