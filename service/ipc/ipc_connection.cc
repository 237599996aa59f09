#include "service/ipc/ipc_connection.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "google/protobuf/message_lite.h"

namespace sluice {
namespace {
constexpr size_t kReadChunk = 64 * 1024;

// Whether the kernel still holds bytes this end sent and the peer has not
// read. On an AF_UNIX stream socket SIOCOUTQ is the memory of the sent
// buffers not yet consumed by the reader (not a byte count, but 0 exactly
// when everything was read). An error counts as "unread": the caller then
// knows nothing more than before.
bool KernelHoldsUnreadOutput(int sock) {
  int unread = 0;
  if (ioctl(sock, SIOCOUTQ, &unread) != 0) return true;
  return unread > 0;
}
}  // namespace

IpcConnection::IpcConnection(EventLoop* loop, ScopedFd socket, size_t max_queued_output,
                             std::function<void(const std::string&, bool)> on_closed)
    : loop_(loop),
      socket_(std::move(socket)),
      max_queued_output_(max_queued_output),
      on_closed_(std::move(on_closed)) {
  GetPeerCredentials(socket_.get(), &peer_);
}

IpcConnection::~IpcConnection() {
  *alive_ = false;
  if (watching_) loop_->RemoveFdWatch(socket_.get());
}

void IpcConnection::Start() {
  watching_ = true;
  loop_->AddFdWatch(socket_.get(), EPOLLIN, [this](uint32_t events) { OnEvents(events); });
}

void IpcConnection::OnEvents(uint32_t events) {
  if (events & EPOLLOUT) WriteQueued();
  if (closed_) return;
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) ReadAvailable();
}

void IpcConnection::ReadAvailable() {
  // Bounded work per wake-up, so one busy peer cannot starve the others.
  for (int round = 0; round < 16 && !closed_; round++) {
    size_t available = 0;
    uint8_t* dst = reader_.WritableSpace(kReadChunk, &available);
    std::vector<ScopedFd> fds;
    ssize_t n = RecvWithFds(socket_.get(), dst, available, &fds);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      CloseInternal("read error", false);
      return;
    }
    for (ScopedFd& fd : fds) received_fds_.push_back(std::move(fd));
    if (received_fds_.size() > kMaxQueuedFds) {
      CloseInternal("peer sent more file descriptors than it may", true);
      return;
    }
    if (n == 0) {
      CloseInternal("peer closed the connection", false);
      return;
    }
    reader_.CommitWritten(static_cast<size_t>(n));
    std::string_view frame;
    for (;;) {
      FrameReader::Result r = reader_.NextFrame(&frame);
      if (r == FrameReader::Result::kNeedMore) break;
      if (r == FrameReader::Result::kError) {
        CloseInternal("bad frame length (0 or above " + std::to_string(kMaxFrameSize) + " bytes)",
                      true);
        return;
      }
      if (handler_) handler_->OnFrame(frame);
      if (closed_) return;
    }
    if (static_cast<size_t>(n) < available) return;  // Drained the socket.
  }
}

void IpcConnection::Send(const google::protobuf::MessageLite& envelope, int fd) {
  if (closed_ || output_failed_) return;
  Output out;
  std::string payload = envelope.SerializeAsString();
  if (payload.empty() || payload.size() > kMaxFrameSize) {
    // Nothing we build is this large (ReadBuffers slices are smaller).
    return;
  }
  AppendFrame(payload, &out.bytes);
  if (fd >= 0) out.fd.reset(fcntl(fd, F_DUPFD_CLOEXEC, 0));
  // Before the new frame goes in: if nothing is unread now, the peer has
  // read every earlier frame.
  ObserveDrained();
  // An empty queue takes any frame, so a single large frame (a big config)
  // is never mistaken for a peer that does not read.
  if (queued_bytes_ > 0 && queued_bytes_ + out.bytes.size() > max_queued_output_) {
    if (handler_) handler_->OnPeerNotReading();
    CloseInternal("peer does not read its socket (" + std::to_string(queued_bytes_) +
                      " bytes of output queued)",
                  false);
    return;
  }
  queued_bytes_ += out.bytes.size();
  frames_sent_++;
  output_.push_back(std::move(out));
  WriteQueued();
}

void IpcConnection::ObserveDrained() {
  if (output_.empty() && !closed_ && !KernelHoldsUnreadOutput(socket_.get()))
    frames_read_by_peer_ = frames_sent_;
}

bool IpcConnection::PeerHasRead(uint64_t frame) {
  if (output_failed_) return false;  // It reads nothing any more.
  if (frames_read_by_peer_ < frame) ObserveDrained();
  return frames_read_by_peer_ >= frame;
}

void IpcConnection::NotifyWhenOutputAtMost(size_t bytes, std::function<void()> fn) {
  notify_at_most_ = bytes;
  on_drained_ = std::move(fn);
  MaybeNotifyDrained();
}

void IpcConnection::MaybeNotifyDrained() {
  if (!on_drained_ || closed_ || queued_bytes_ > notify_at_most_) return;
  // From a task: the callback usually sends more, which must not recurse
  // into WriteQueued's loop.
  std::weak_ptr<bool> alive = alive_;
  loop_->PostTask([this, alive, fn = std::move(on_drained_)] {
    if (alive.lock() && !closed_) fn();
  });
  on_drained_ = nullptr;
}

void IpcConnection::WriteQueued() {
  while (!output_.empty()) {
    Output& o = output_.front();
    ssize_t n = SendWithFd(socket_.get(), o.bytes.data() + o.sent, o.bytes.size() - o.sent,
                           o.sent == 0 ? o.fd.get() : -1);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      // The peer stopped reading (EPIPE) or went away (ECONNRESET). What it
      // sent before that is still in our receive queue, typically a
      // producer's last commits and writer registrations: keep reading to
      // its end of file, so they count. Only our output is dropped.
      output_.clear();
      queued_bytes_ = 0;
      output_failed_ = true;
      break;
    }
    o.sent += static_cast<size_t>(n);
    o.fd.reset();
    queued_bytes_ -= static_cast<size_t>(n);
    if (o.sent == o.bytes.size()) output_.pop_front();
  }
  UpdateWatch();
  MaybeNotifyDrained();
}

void IpcConnection::UpdateWatch() {
  bool want = !output_.empty();
  if (want == want_write_ || !watching_) return;
  want_write_ = want;
  loop_->SetFdWatchEvents(socket_.get(), (closed_ ? 0u : static_cast<uint32_t>(EPOLLIN)) |
                                             (want ? static_cast<uint32_t>(EPOLLOUT) : 0u));
}

ScopedFd IpcConnection::TakeReceivedFd() {
  if (received_fds_.empty()) return ScopedFd();
  ScopedFd fd = std::move(received_fds_.front());
  received_fds_.pop_front();
  return fd;
}

void IpcConnection::CloseInternal(const std::string& reason, bool protocol_error) {
  if (closed_) return;
  closed_ = true;
  // One last non-blocking attempt to deliver what is queued (an error reply).
  if (!output_.empty()) WriteQueued();
  if (watching_) {
    loop_->RemoveFdWatch(socket_.get());
    watching_ = false;
  }
  shutdown(socket_.get(), SHUT_RDWR);
  received_fds_.clear();
  on_drained_ = nullptr;
  std::weak_ptr<bool> alive = alive_;
  loop_->PostTask([alive, cb = on_closed_, reason, protocol_error] {
    if (alive.lock()) cb(reason, protocol_error);
  });
}

}  // namespace sluice
