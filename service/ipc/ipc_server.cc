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
  TracingService* service = nullptr;
  bool producer = false;
  // Declaration order = destruction order reversed: the port (which may
  // disconnect from the service and send nothing more) goes first.
  std::unique_ptr<IpcConnection> connection;
  std::unique_ptr<IpcFrameHandler> port;

  void OnFrame(std::string_view frame) override {
    const bool perfetto = IsPerfettoIpcFrame(frame);
    IpcConnection* c = connection.get();
    if (producer && perfetto) port = std::make_unique<PerfettoProducerPort>(service, c);
    else if (producer) port = std::make_unique<IpcProducerPort>(service, c);
    else if (perfetto) port = std::make_unique<PerfettoConsumerPort>(service, c);
    else port = std::make_unique<IpcConsumerPort>(service, c);
    connection->set_handler(port.get());
    port->OnFrame(frame);
  }
};

IpcServer::IpcServer(TracingService* service, const IpcServerOptions& options)
    : service_(service), options_(options) {}

StatusOr<std::unique_ptr<IpcServer>> IpcServer::Create(TracingService* service,
                                                       const IpcServerOptions& options) {
  std::unique_ptr<IpcServer> server(new IpcServer(service, options));
  if (options.producer_listen_fd >= 0) {
    server->producer_listen_.reset(options.producer_listen_fd);
    SLUICE_RETURN_IF_ERROR(AdoptListeningSocket(options.producer_listen_fd,
                                                options.producer_listen.backlog,
                                                "fd " + std::to_string(options.producer_listen_fd) +
                                                    " (producer socket)"));
  } else {
    SLUICE_ASSIGN_OR_RETURN(server->producer_listen_,
                            ListenUnixSocket(options.producer_socket_path, options.producer_listen));
  }
  if (options.consumer_listen_fd >= 0) {
    server->consumer_listen_.reset(options.consumer_listen_fd);
    SLUICE_RETURN_IF_ERROR(AdoptListeningSocket(options.consumer_listen_fd,
                                                options.consumer_listen.backlog,
                                                "fd " + std::to_string(options.consumer_listen_fd) +
                                                    " (consumer socket)"));
  } else {
    SLUICE_ASSIGN_OR_RETURN(server->consumer_listen_,
                            ListenUnixSocket(options.consumer_socket_path, options.consumer_listen));
  }
  IpcServer* s = server.get();
  EventLoop* loop = service->loop();
  loop->RunAndWait([s, loop] {
    int pfd = s->producer_listen_.get();
    int cfd = s->consumer_listen_.get();
    loop->AddFdWatch(pfd, EPOLLIN, [s, pfd](uint32_t) { s->OnAcceptable(pfd, true); });
    loop->AddFdWatch(cfd, EPOLLIN, [s, cfd](uint32_t) { s->OnAcceptable(cfd, false); });
  });
  return server;
}

IpcServer::~IpcServer() {
  service_->loop()->RunAndWait([this] {
    *alive_ = false;
    service_->loop()->RemoveFdWatch(producer_listen_.get());
    service_->loop()->RemoveFdWatch(consumer_listen_.get());
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
    c->service = service_;
    c->producer = producer;
    std::weak_ptr<bool> alive = alive_;
    c->connection = std::make_unique<IpcConnection>(
        service_->loop(), std::move(sock),
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
  if (protocol_error) service_->CountDroppedIpcConnection();
  const PeerCredentials& peer = it->second->connection->peer();
  if (service_->options().log && (protocol_error || !it->second->producer))
    service_->options().log(std::string("sluiced: ") +
                            (it->second->producer ? "producer" : "consumer") + " connection (pid " +
                            std::to_string(peer.pid) + ", uid " + std::to_string(peer.uid) +
                            ") closed: " + reason);
  std::unique_ptr<Connection> c = std::move(it->second);
  connections_.erase(it);
  c.reset();  // Port first (disconnects the producer: SMB scraped), then socket.
}

}  // namespace sluice
