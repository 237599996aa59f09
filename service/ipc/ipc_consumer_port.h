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
// (last_slice_for_packet marks its end).
//
// Service thread only.
#ifndef SLUICE_SERVICE_IPC_IPC_CONSUMER_PORT_H_
#define SLUICE_SERVICE_IPC_IPC_CONSUMER_PORT_H_

#include <memory>
#include <string_view>

#include "service/ipc/ipc_connection.h"
#include "service/tracing_service.h"
#include "sluice/ipc.pb.h"

namespace sluice {

inline constexpr size_t kReadBuffersSliceBytes = 1u << 20;

class IpcConsumerPort : public IpcFrameHandler, public Consumer {
 public:
  IpcConsumerPort(TracingService* service, IpcChannel* channel);
  ~IpcConsumerPort() override;

  void OnFrame(std::string_view frame) override;
  void OnTracingDisabled(const std::string& error) override;

 private:
  // The reply to every request but Flush; an error Status becomes the
  // reply's error.
  Status HandleRequest(const protos::ConsumerToService& msg, protos::ServiceToConsumer* reply);
  void StartFlush(const protos::ConsumerToService& msg);
  Status SendBuffers(protos::ServiceToConsumer* reply);
  static void FillServiceState(const ServiceState& state, protos::QueryServiceStateResponse* out);

  TracingService* const service_;
  IpcChannel* const channel_;
  ConsumerId id_ = 0;
  bool closing_ = false;
  // Checked by Flush callbacks that may run after the port is gone.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_IPC_CONSUMER_PORT_H_
