// IpcChannel and IpcConnection: the service's end of one producer or
// consumer socket.
//
// IpcChannel is what a port (ipc_producer_port.h, ipc_consumer_port.h) talks
// through: send an envelope (and maybe an fd), take a received fd, close.
// IpcConnection implements it over a non-blocking socket on the service's
// EventLoop; tests and fuzzers implement it without sockets.
//
// IpcConnection, on the service thread only:
//  - reads whatever the socket has into a FrameReader and hands each frame to
//    its handler; received fds are queued (at most kMaxQueuedFds, more closes
//    the connection: a peer must not pile up fds in the service);
//  - queues output and writes it as the socket drains (EPOLLOUT), keeping
//    at most `max_queued_output` bytes: a peer that does not read is dropped
//    rather than growing the service's memory;
//  - on EOF, error, a bad frame or Close(), stops watching the socket and
//    reports OnClosed() from a fresh task, so a handler may close the
//    connection from inside OnFrame and the owner may delete it then.
#ifndef SLUICE_SERVICE_IPC_IPC_CONNECTION_H_
#define SLUICE_SERVICE_IPC_IPC_CONNECTION_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "service/event_loop.h"
#include "service/ipc/ipc_frame.h"
#include "service/ipc/ipc_socket.h"

namespace google::protobuf {
class MessageLite;
}

namespace sluice {

class IpcChannel {
 public:
  virtual ~IpcChannel() = default;
  // Queues `envelope` as one frame; `fd` (if >= 0) goes with it (the channel
  // dups it, the caller keeps its own).
  virtual void Send(const google::protobuf::MessageLite& envelope, int fd = -1) = 0;
  // The oldest fd received so far and not yet taken (invalid if none).
  virtual ScopedFd TakeReceivedFd() = 0;
  virtual const PeerCredentials& peer() const = 0;
  // Stops reading, tries to send what is queued, then closes. `reason` is
  // logged.
  virtual void Close(const std::string& reason) = 0;
};

class IpcFrameHandler {
 public:
  virtual ~IpcFrameHandler() = default;
  virtual void OnFrame(std::string_view frame) = 0;
};

class IpcConnection : public IpcChannel {
 public:
  static constexpr size_t kMaxQueuedFds = 4;

  // `on_closed(reason, protocol_error)` runs in a later task once the
  // connection is closed; the owner deletes the connection there.
  IpcConnection(EventLoop* loop, ScopedFd socket, size_t max_queued_output,
                std::function<void(const std::string& reason, bool protocol_error)> on_closed);
  ~IpcConnection() override;

  void set_handler(IpcFrameHandler* handler) { handler_ = handler; }
  // Starts watching the socket. Loop thread.
  void Start();

  void Send(const google::protobuf::MessageLite& envelope, int fd = -1) override;
  ScopedFd TakeReceivedFd() override;
  const PeerCredentials& peer() const override { return peer_; }
  void Close(const std::string& reason) override { CloseInternal(reason, false); }

 private:
  struct Output {
    std::string bytes;
    size_t sent = 0;
    ScopedFd fd;  // Sent with the first byte.
  };

  void OnEvents(uint32_t events);
  void ReadAvailable();
  void WriteQueued();
  void UpdateWatch();
  void CloseInternal(const std::string& reason, bool protocol_error);

  EventLoop* const loop_;
  ScopedFd socket_;
  const size_t max_queued_output_;
  std::function<void(const std::string&, bool)> on_closed_;
  IpcFrameHandler* handler_ = nullptr;
  PeerCredentials peer_;
  FrameReader reader_;
  std::deque<ScopedFd> received_fds_;
  std::deque<Output> output_;
  size_t queued_bytes_ = 0;
  bool watching_ = false;
  bool want_write_ = false;
  bool closed_ = false;
  // Outlives the connection in queued tasks: they check it before touching
  // `this`.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_IPC_CONNECTION_H_
