// RelayServer: the host's end of relay links (`sluiced --relay-socket`).
//
// Each connected relay (sluice-relay in a guest, protos/sluice/relay.proto)
// is one machine. The server gives it its machine_id
// (TracingService::AddRelayedMachine: the same id when the same name comes
// back), measures its clocks against ours with the relay's rounds and hands
// the best round of each burst to the service (SetMachineClockSync), and
// stands in for each of the guest's producers: a RelayedProducer connects
// to the service in-process with the guest's name, uid, pid and the
// machine's id, passes the service's calls (setup, start, stop, flush,
// clear incremental state) down the link, and passes the guest's commits
// up as copied chunks (ProducerEndpoint::CommitCopiedChunks: checked as an
// SMB's would be). So to the service a guest's producer is a producer like
// any other, on another machine.
//
// A link that ends (the guest killed, rebooted, the cable pulled) takes its
// producers with it: the service scrapes and stops them as for any producer
// that goes away, and the sessions go on. A frame cut off by the end counts
// as a chunk lost in transit.
//
// Bounds on what a relay may send: frames of at most 4 MiB (RelayLink),
// kMaxProducersPerLink producers, kMaxLinks links. Service thread only.
#ifndef SLUICE_SERVICE_RELAY_RELAY_SERVER_H_
#define SLUICE_SERVICE_RELAY_RELAY_SERVER_H_

#include <map>
#include <memory>
#include <string>

#include "service/relay/relay_address.h"
#include "service/relay/relay_link.h"
#include "shm/base/status.h"

namespace sluice {

class TracingService;

class RelayServer {
 public:
  static constexpr size_t kMaxLinks = 64;
  static constexpr size_t kMaxProducersPerLink = 256;

  // Listens on `address` (a unix socket gets `unix_listen`'s mode and
  // group), or adopts `listen_fd` (socket activation) when >= 0.
  static StatusOr<std::unique_ptr<RelayServer>> Create(TracingService* service,
                                                       const RelayAddress& address,
                                                       const ListenOptions& unix_listen,
                                                       int listen_fd = -1);
  // No listener: links come only through AddLink (the fuzzer).
  static std::unique_ptr<RelayServer> CreateWithoutListener(TracingService* service);
  ~RelayServer();
  RelayServer(const RelayServer&) = delete;
  RelayServer& operator=(const RelayServer&) = delete;

  size_t num_links() const { return links_.size(); }
  // Serves a connected stream as a relay link (what the listener accepted,
  // or one end of a socketpair: the fuzzer). Service thread.
  void AddLink(ScopedFd connected);

 private:
  class MachineLink;
  RelayServer(TracingService* service, ScopedFd listen_fd);
  void OnAcceptable();
  void OnLinkClosed(uint64_t id);
  // A machine's relay connected again: its older links are stale. Returns
  // what the host read of the newest of them (RelayWelcome.previous_link_bytes),
  // or of the one that closed last; false if none is known.
  // *cut: it ended inside a commit frame (counted as lost in transit).
  bool TakePreviousLink(const std::string& name, uint64_t except, uint64_t* bytes, bool* cut);

  TracingService* const service_;
  ScopedFd listen_fd_;
  std::map<uint64_t, std::unique_ptr<MachineLink>> links_;
  // By machine name: the bytes the host read of its last link that ended.
  struct ClosedLink {
    uint64_t bytes = 0;
    bool cut = false;
  };
  std::map<std::string, ClosedLink> closed_links_;
  uint64_t next_link_id_ = 1;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_RELAY_RELAY_SERVER_H_
