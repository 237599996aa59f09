// IpcConsumerPort: the service's side of one consumer socket. Each
// ConsumerToService request is answered by a ServiceToConsumer with the same
// request_id (ReadBuffers: several, the last with `last` set); the end of the
// session is announced unsolicited (request_id 0, TracingDisabled).
//
// write_into_file without output_path: the EnableTracing frame carries the
// output file's fd (SCM_RIGHTS), so the file is created by, and with the
// permissions of, the consumer. output_path is accepted only from root
// (TracingService::EnableTracing).
//
// ReadBuffers answers are cut into frames of at most kReadBuffersSliceBytes
// of packet data; a packet larger than that is split into slices
// (last_slice_for_packet marks its end). The answer is produced as the
// consumer reads it: a slice of the buffers at a time, and none while more
// than kReadAheadBytes wait in the connection's queue (the port resumes when
// it drained to kReadResumeBytes). So a consumer that reads slowly, or not at
// all, costs the service a few MiB instead of a copy of its buffers, and the
// service thread serves producers and other consumers between slices. A
// consumer that closes its socket mid-answer frees its session like any
// consumer that goes away. Requests that arrive during an answer wait for
// its end (at most kMaxDeferredRequests, more is a protocol error).
//
// Service thread only.
#ifndef SLUICE_SERVICE_IPC_IPC_CONSUMER_PORT_H_
#define SLUICE_SERVICE_IPC_IPC_CONSUMER_PORT_H_

#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "service/ipc/ipc_connection.h"
#include "service/tracing_service.h"
#include "sluice/ipc.pb.h"

namespace sluice {

inline constexpr size_t kReadBuffersSliceBytes = 1u << 20;

class IpcConsumerPort : public IpcFrameHandler, public Consumer {
 public:
  static constexpr size_t kReadAheadBytes = 2 * kReadBuffersSliceBytes;
  static constexpr size_t kReadResumeBytes = kReadBuffersSliceBytes;
  static constexpr size_t kMaxDeferredRequests = 16;

  IpcConsumerPort(TracingService* service, IpcChannel* channel);
  ~IpcConsumerPort() override;

  void OnFrame(std::string_view frame) override;
  void OnTracingDisabled(const std::string& error) override;
  void OnCloneTriggerHit(const std::string& trigger_name) override;
  void OnAllDataSourcesStarted() override;
  void OnTraceFileFinished(const std::string& name) override;

 private:
  void HandleFrame(std::string_view frame);
  // The reply to every request but Flush and ReadBuffers; an error Status
  // becomes the reply's error.
  Status HandleRequest(const protos::ConsumerToService& msg, protos::ServiceToConsumer* reply);
  void StartFlush(const protos::ConsumerToService& msg);
  void StartClone(const protos::ConsumerToService& msg);
  // ReadBuffers: sends slices until the buffers are drained or the queue is
  // full, then waits for the drain notification.
  void ContinueRead();
  void FinishRead();
  static void FillServiceState(const ServiceState& state, protos::QueryServiceStateResponse* out);

  TracingService* const service_;
  IpcChannel* const channel_;
  // Not ok if the consumer allowlists refuse this peer: every request is
  // answered with it (so the client prints why), none is served.
  Status allowed_;
  ConsumerId id_ = 0;
  bool closing_ = false;
  bool reading_ = false;  // A ReadBuffers answer is in progress.
  uint64_t read_request_id_ = 0;
  std::deque<std::string> deferred_requests_;
  // Checked by Flush callbacks that may run after the port is gone.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_IPC_CONSUMER_PORT_H_
