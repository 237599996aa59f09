// IpcServer: the two listening sockets of sluiced and their connections.
//
//   /run/sluice/producer.sock   producers (sluice-probes, apps): IpcProducerPort
//   /run/sluice/consumer.sock   consumers (the `sluice` CLI):    IpcConsumerPort
//
// A connection that opens with a Perfetto BindService gets the Perfetto port
// of its socket's kind instead (PerfettoProducerPort, PerfettoConsumerPort),
// so upstream Perfetto's producers and `perfetto` command work unmodified;
// with --perfetto-sockets the server also listens where they look for
// traced.
//
// Paths, permissions and group are options (sluiced flags); the parent
// directory is created 0755 and the sockets chmod'ed to `mode` (default 0660:
// root and the socket's group). Under systemd socket activation the sockets
// come in as fds instead (LISTEN_FDS from systemd, ANDROID_SOCKET_* from
// Android init), made non-blocking and listening by AdoptListeningSocket().
// docs/IPC.md has the table.
//
// Each accepted socket becomes an IpcConnection plus a port; the server owns
// both and deletes them when the connection closes. It logs one line per
// producer connect/disconnect through TracingServiceOptions::log.
//
// Threads: create, use and destroy on the service thread, or while the loop
// is not running (the destructor hops onto the loop thread if needed).
#ifndef SLUICE_SERVICE_IPC_IPC_SERVER_H_
#define SLUICE_SERVICE_IPC_IPC_SERVER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "service/ipc/ipc_connection.h"
#include "service/ipc/ipc_socket.h"
#include "shm/base/status.h"

namespace sluice {

class ProducerHost;
class TracingService;

struct IpcServerOptions {
  std::string producer_socket_path = "/run/sluice/producer.sock";
  std::string consumer_socket_path = "/run/sluice/consumer.sock";
  ListenOptions producer_listen;  // mode 0660 by default
  ListenOptions consumer_listen;
  // Already-listening sockets (socket activation); take precedence over paths.
  int producer_listen_fd = -1;
  int consumer_listen_fd = -1;
  // A second pair where upstream Perfetto's programs look for traced
  // (sluiced --perfetto-sockets; Android init's traced_producer and
  // traced_consumer): "" and -1 for none. Every socket takes either
  // protocol; these exist so that unmodified tools find sluiced.
  std::string perfetto_producer_socket_path;
  std::string perfetto_consumer_socket_path;
  int perfetto_producer_listen_fd = -1;
  int perfetto_consumer_listen_fd = -1;
  // Output queued for a peer that does not read, before it is dropped (an
  // empty queue takes one frame of any size). A producer gets only small
  // control messages, so 1 MiB is thousands of them: 256 stalled producers
  // cost at most 256 MiB. A consumer's ReadBuffers answer is produced as
  // the consumer reads it (IpcConsumerPort), so its queue holds about 2 MiB;
  // the bound is a backstop.
  size_t producer_max_queued_output = 1u << 20;
  size_t consumer_max_queued_output = 64u << 20;
  uint32_t max_connections = 1024;
};

class IpcServer {
 public:
  static StatusOr<std::unique_ptr<IpcServer>> Create(TracingService* service,
                                                     const IpcServerOptions& options);
  // Producer sockets only, served by `host` (the relay in a guest,
  // service/relay/relay_producer_host.h): the consumer paths and fds must be
  // unset.
  static StatusOr<std::unique_ptr<IpcServer>> CreateForProducers(ProducerHost* host,
                                                                 const IpcServerOptions& options);
  ~IpcServer();
  IpcServer(const IpcServer&) = delete;
  IpcServer& operator=(const IpcServer&) = delete;

  size_t num_connections() const { return connections_.size(); }

 private:
  struct Connection;
  struct Listener {
    ScopedFd fd;
    bool producer = false;
  };
  IpcServer(ProducerHost* producers, TracingService* consumers, const IpcServerOptions& options);
  static StatusOr<std::unique_ptr<IpcServer>> CreateInternal(ProducerHost* producers,
                                                             TracingService* consumers,
                                                             const IpcServerOptions& options);
  // Adopts `fd` if >= 0, else listens at `path`; nothing if both are unset.
  Status AddListener(int fd, const std::string& path, bool producer, const ListenOptions& listen);
  void OnAcceptable(int listen_fd, bool producer);
  void OnClosed(uint64_t id, const std::string& reason, bool protocol_error);

  ProducerHost* const producers_;
  TracingService* const consumers_;  // Null: no consumer sockets.
  const IpcServerOptions options_;
  std::vector<Listener> listeners_;
  std::map<uint64_t, std::unique_ptr<Connection>> connections_;
  uint64_t next_id_ = 1;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_IPC_SERVER_H_
