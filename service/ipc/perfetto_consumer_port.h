// PerfettoConsumerPort: the service's side of a consumer that speaks
// Perfetto's IPC (upstream's `perfetto` command line, and anything built on
// its consumer API). It serves Perfetto's "ConsumerPort" service
// (protos/perfetto/ipc/consumer_port.proto) by translating each call into
// the sluice request that means the same and handing it to an
// IpcConsumerPort, and each of that port's answers back into Perfetto's
// reply. So a Perfetto consumer gets exactly what a sluice one gets
// (admission by the consumer allowlists, one session per connection, files
// written by the service, ReadBuffers produced as the consumer reads it).
//
// Where the protocols differ:
//  - EnableTracing. Perfetto answers it when the session ends (disabled,
//    with the error if any); sluice answers at once and announces the end.
//    The Perfetto call is kept until that announcement. After Attach, the
//    client calls EnableTracing with attach_notification_only to hear of
//    the end of the session it attached to: no new session then.
//  - ObserveEvents. A stream: the session's clone triggers and the start of
//    all its data sources (`perfetto --background-wait` waits for it) go on
//    it; data source instance changes are not announced.
//  - CloneSession. By unique_session_name (sluice's session key or unique
//    name) or by session id (sluiced's "#ID"). The output file upstream's
//    `perfetto` sends along is not used: the clone is read back with
//    ReadBuffers (was_write_into_file = false).
//  - SaveTraceForBugreport and ChangeTraceConfig: refused with the reason.
//
// Service thread only.
#ifndef SLUICE_SERVICE_IPC_PERFETTO_CONSUMER_PORT_H_
#define SLUICE_SERVICE_IPC_PERFETTO_CONSUMER_PORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "service/ipc/forwarding_channel.h"
#include "service/ipc/ipc_connection.h"
#include "service/ipc/ipc_consumer_port.h"
#include "service/ipc/perfetto_ipc_host.h"
#include "sluice/ipc.pb.h"

namespace sluice {

class TracingService;

class PerfettoConsumerPort : public IpcFrameHandler, private ForwardingChannel {
 public:
  static constexpr char kServiceName[] = "ConsumerPort";
  // Calls in flight at once (each waits for sluice's answer); more is a
  // protocol error. Upstream's `perfetto` has at most a few.
  static constexpr size_t kMaxPendingCalls = 64;

  PerfettoConsumerPort(TracingService* service, IpcChannel* channel);
  ~PerfettoConsumerPort() override;

  // IpcFrameHandler.
  void OnFrame(std::string_view frame) override;

 private:
  void HandleCall(const PerfettoIpcHost::Call& call);
  // Hands `request` (its request id set here) to the sluice port; its answer
  // goes to `call`.
  void Forward(const PerfettoIpcHost::Call& call, protos::ConsumerToService* request);
  void Refuse(const PerfettoIpcHost::Call& call, const std::string& why);
  // Turns the sluice answer `msg` into the reply of `call`; false while more
  // answers to it are to come (ReadBuffers).
  bool Answer(const PerfettoIpcHost::Call& call, const protos::ServiceToConsumer& msg);
  void AnswerEnableTracing(const std::string& error);
  void AnswerAllStarted();

  // IpcChannel, as the sluice port sees it: its ServiceToConsumer answers
  // become Perfetto replies on the real channel.
  void Send(const google::protobuf::MessageLite& envelope, int fd = -1) override;

  TracingService* const service_;
  PerfettoIpcHost host_;
  uint64_t last_request_id_ = 0;  // Of the requests sent to the sluice port.
  // Sluice request id -> the Perfetto call its answer goes to.
  std::map<uint64_t, PerfettoIpcHost::Call> pending_;
  // The EnableTracing call, answered when the session ends.
  std::optional<PerfettoIpcHost::Call> enable_call_;
  std::optional<PerfettoIpcHost::Call> observe_call_;  // ObserveEvents' stream.
  bool observe_all_started_ = false;  // It asked for TYPE_ALL_DATA_SOURCES_STARTED.
  bool all_started_ = false;          // The session's data sources all started.
  bool closing_ = false;
  // Last: destroyed first (it may answer while it goes).
  IpcConsumerPort port_;
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_PERFETTO_CONSUMER_PORT_H_
