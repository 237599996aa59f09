// ProducerHost: what a producer port (service/ipc/ipc_producer_port.h,
// perfetto_producer_port.h) needs from the side that owns producers' shared
// memory. TracingService is one (sluiced, `sluice record`); the relay in a
// guest is the other (service/relay/relay_producer_host.h): it takes the
// guest's producers on the usual socket with the same ports, and moves what
// they commit to the host's sluiced instead of into a buffer of its own.
#ifndef SLUICE_SERVICE_PRODUCER_HOST_H_
#define SLUICE_SERVICE_PRODUCER_HOST_H_

#include <memory>
#include <string>

#include "service/event_loop.h"
#include "service/ipc/ipc_socket.h"
#include "service/service_endpoints.h"
#include "shm/base/status.h"

namespace sluice {

class ProducerHost {
 public:
  virtual ~ProducerHost() = default;
  // Creates the producer's shared memory and returns the producer's handle;
  // *shm_fd is the memfd that goes to the producer (kept by the host), -1
  // when the producer brought its own (ProducerOptions.producer_shm_fd).
  // Refused when `peer` may not produce or there are too many producers.
  virtual StatusOr<std::unique_ptr<ProducerEndpoint>> ConnectProducer(
      Producer* endpoint, const ProducerOptions& options, const PeerCredentials& peer,
      int* shm_fd) = 0;
  // The IPC layer dropped a connection for a bad frame.
  virtual void CountDroppedIpcConnection() = 0;
  // The IPC layer drops the producer behind `endpoint`: it does not read its
  // socket (`why`).
  virtual void CountProducerNotReading(Producer* endpoint, const std::string& why) = 0;
  // The thread the ports run on.
  virtual EventLoop* loop() const = 0;
  // One line for the log (a refused or dropped connection); may do nothing.
  virtual void LogLine(const std::string& line) const = 0;
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_PRODUCER_HOST_H_
