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
//  - never blocks: output the socket does not take at once is queued and
//    written as the socket drains (EPOLLOUT). At most `max_queued_output`
//    bytes are queued (one frame always fits an empty queue): a peer that
//    does not read is dropped (IpcFrameHandler::OnPeerNotReading, then
//    closed) rather than growing the service's memory;
//  - numbers the frames it sends and can tell whether the peer has read up
//    to a frame (PeerHasRead), for the producer port's "does this producer
//    read its socket at all" check at a flush timeout;
//  - a failed write (the peer stopped reading or went away) drops the
//    output but not the input: what the peer sent before is read and
//    handled to its end of file, so a producer's last commits count even
//    when it closed while the service was sending to it;
//  - on EOF, read error, a bad frame or Close(), stops watching the socket
//    and reports OnClosed() from a fresh task, so a handler may close the
//    connection from inside OnFrame and the owner may delete it then.
#ifndef SLUICE_SERVICE_IPC_IPC_CONNECTION_H_
#define SLUICE_SERVICE_IPC_IPC_CONNECTION_H_

#include <cstdint>
#include <deque>
#include <functional>
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

  // Flow control and liveness. The defaults describe a channel that hands
  // every frame to the peer at once (test and fuzzer channels).
  //
  // Frames passed to Send so far: the number of the last one (from 1).
  virtual uint64_t frames_sent() const { return 0; }
  // True if the peer has taken frame `frame` and every frame before it off
  // the socket. A lower bound: the channel knows this only when it sees
  // nothing unread (its queue empty, nothing in the kernel's send queue), so
  // a peer that reads but always lags a frame behind looks like one that
  // has not read.
  virtual bool PeerHasRead(uint64_t frame) {
    (void)frame;
    return true;
  }
  // Bytes queued in the service, not yet taken by the socket.
  virtual size_t queued_output_bytes() const { return 0; }
  // Runs `fn` once, from a task on the service thread, when the queued
  // output is at most `bytes` (in the next task if it already is). A later
  // call replaces an earlier one. Not run if the channel closes first.
  virtual void NotifyWhenOutputAtMost(size_t bytes, std::function<void()> fn) {
    (void)bytes;
    fn();
  }
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
  // Output would exceed max_queued_output: the peer does not read. Called
  // once, right before the connection closes itself.
  virtual void OnPeerNotReading() {}
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
  uint64_t frames_sent() const override { return frames_sent_; }
  bool PeerHasRead(uint64_t frame) override;
  size_t queued_output_bytes() const override { return queued_bytes_; }
  void NotifyWhenOutputAtMost(size_t bytes, std::function<void()> fn) override;
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
  // Records that the peer has read every frame sent so far if nothing is
  // unread right now (our queue empty and the kernel's send queue empty).
  void ObserveDrained();
  void MaybeNotifyDrained();
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
  uint64_t frames_sent_ = 0;
  uint64_t frames_read_by_peer_ = 0;  // Lower bound; see PeerHasRead.
  size_t notify_at_most_ = 0;
  std::function<void()> on_drained_;
  bool output_failed_ = false;  // A write failed: output is dropped from now on.
  bool watching_ = false;
  bool want_write_ = false;
  bool closed_ = false;
  // Outlives the connection in queued tasks: they check it before touching
  // `this`.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_IPC_CONNECTION_H_
