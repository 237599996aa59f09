#include "service/ipc/ipc_server.h"

#include <sys/epoll.h>

#include "service/ipc/ipc_consumer_port.h"
#include "service/ipc/ipc_producer_port.h"
#include "service/ipc/perfetto_consumer_port.h"
#include "service/ipc/perfetto_ipc_host.h"
#include "service/ipc/perfetto_producer_port.h"
#include "service/tracing_service.h"

namespace sluice {

// A connection and its port. The port is chosen by the first frame: a
// Perfetto BindService gets the Perfetto port of the socket's kind, any
// other frame sluice's own (docs/IPC.md, "Perfetto's IPC"). Until then the
// connection's frames come here.
struct IpcServer::Connection : IpcFrameHandler {
  ProducerHost* producers = nullptr;
  TracingService* consumers = nullptr;
  bool producer = false;
  // Declaration order = destruction order reversed: the port (which may
  // disconnect from the service and send nothing more) goes first.
  std::unique_ptr<IpcConnection> connection;
  std::unique_ptr<IpcFrameHandler> port;

  void OnFrame(std::string_view frame) override {
    const bool perfetto = IsPerfettoIpcFrame(frame);
    IpcConnection* c = connection.get();
    if (producer && perfetto) port = std::make_unique<PerfettoProducerPort>(producers, c);
    else if (producer) port = std::make_unique<IpcProducerPort>(producers, c);
    else if (perfetto) port = std::make_unique<PerfettoConsumerPort>(consumers, c);
    else port = std::make_unique<IpcConsumerPort>(consumers, c);
    connection->set_handler(port.get());
    port->OnFrame(frame);
  }
};

IpcServer::IpcServer(ProducerHost* producers, TracingService* consumers,
                     const IpcServerOptions& options)
    : producers_(producers), consumers_(consumers), options_(options) {}

Status IpcServer::AddListener(int fd, const std::string& path, bool producer,
                              const ListenOptions& listen) {
  const char* kind = producer ? "producer" : "consumer";
  Listener l;
  l.producer = producer;
  if (fd >= 0) {
    l.fd.reset(fd);
    SLUICE_RETURN_IF_ERROR(AdoptListeningSocket(
        fd, listen.backlog, "fd " + std::to_string(fd) + " (" + kind + " socket)"));
  } else if (!path.empty()) {
    SLUICE_ASSIGN_OR_RETURN(l.fd, ListenUnixSocket(path, listen));
  } else {
    return Status::Ok();
  }
  listeners_.push_back(std::move(l));
  return Status::Ok();
}

StatusOr<std::unique_ptr<IpcServer>> IpcServer::Create(TracingService* service,
                                                       const IpcServerOptions& options) {
  return CreateInternal(service, service, options);
}

StatusOr<std::unique_ptr<IpcServer>> IpcServer::CreateForProducers(ProducerHost* host,
                                                                   const IpcServerOptions& options) {
  if (!options.consumer_socket_path.empty() || options.consumer_listen_fd >= 0 ||
      !options.perfetto_consumer_socket_path.empty() || options.perfetto_consumer_listen_fd >= 0)
    return Status::Error("a producer-only server has no consumer socket");
  return CreateInternal(host, nullptr, options);
}

StatusOr<std::unique_ptr<IpcServer>> IpcServer::CreateInternal(ProducerHost* producers,
                                                               TracingService* consumers,
                                                               const IpcServerOptions& options) {
  std::unique_ptr<IpcServer> server(new IpcServer(producers, consumers, options));
  SLUICE_RETURN_IF_ERROR(server->AddListener(options.producer_listen_fd, options.producer_socket_path,
                                             true, options.producer_listen));
  SLUICE_RETURN_IF_ERROR(server->AddListener(options.consumer_listen_fd, options.consumer_socket_path,
                                             false, options.consumer_listen));
  SLUICE_RETURN_IF_ERROR(server->AddListener(options.perfetto_producer_listen_fd,
                                             options.perfetto_producer_socket_path, true,
                                             options.producer_listen));
  SLUICE_RETURN_IF_ERROR(server->AddListener(options.perfetto_consumer_listen_fd,
                                             options.perfetto_consumer_socket_path, false,
                                             options.consumer_listen));
  IpcServer* s = server.get();
  EventLoop* loop = producers->loop();
  loop->RunAndWait([s, loop] {
    for (const Listener& l : s->listeners_) {
      const int fd = l.fd.get();
      const bool producer = l.producer;
      loop->AddFdWatch(fd, EPOLLIN, [s, fd, producer](uint32_t) { s->OnAcceptable(fd, producer); });
    }
  });
  return server;
}

IpcServer::~IpcServer() {
  producers_->loop()->RunAndWait([this] {
    *alive_ = false;
    for (const Listener& l : listeners_) producers_->loop()->RemoveFdWatch(l.fd.get());
    connections_.clear();
  });
}

void IpcServer::OnAcceptable(int listen_fd, bool producer) {
  for (int i = 0; i < 64; i++) {
    ScopedFd sock = AcceptUnixSocket(listen_fd);
    if (!sock.valid()) return;
    if (connections_.size() >= options_.max_connections) continue;  // Closed by ScopedFd.
    uint64_t id = next_id_++;
    auto c = std::make_unique<Connection>();
    c->producers = producers_;
    c->consumers = consumers_;
    c->producer = producer;
    std::weak_ptr<bool> alive = alive_;
    c->connection = std::make_unique<IpcConnection>(
        producers_->loop(), std::move(sock),
        producer ? options_.producer_max_queued_output : options_.consumer_max_queued_output,
        [this, alive, id](const std::string& reason, bool protocol_error) {
          if (alive.lock() && *alive.lock()) OnClosed(id, reason, protocol_error);
        });
    c->connection->set_handler(c.get());
    c->connection->Start();
    connections_[id] = std::move(c);
  }
}

void IpcServer::OnClosed(uint64_t id, const std::string& reason, bool protocol_error) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  if (protocol_error) producers_->CountDroppedIpcConnection();
  const PeerCredentials& peer = it->second->connection->peer();
  if (protocol_error || !it->second->producer)
    producers_->LogLine(std::string("sluiced: ") +
                            (it->second->producer ? "producer" : "consumer") + " connection (pid " +
                            std::to_string(peer.pid) + ", uid " + std::to_string(peer.uid) +
                            ") closed: " + reason);
  std::unique_ptr<Connection> c = std::move(it->second);
  connections_.erase(it);
  c.reset();  // Port first (disconnects the producer: SMB scraped), then socket.
}

}  // namespace sluice
