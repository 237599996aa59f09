// RelayLink: one relay link's byte stream (a socket or a virtio-serial
// port) carrying RelayFrame frames (protos/sluice/relay.proto), on an
// EventLoop, both ends (sluice-relay in the guest, sluiced's relay server on
// the host).
//
//  - Reads whatever the fd has and hands each frame to `on_frame`; a frame
//    over kMaxFrameSize or one that does not parse ends the link.
//  - Never blocks: what the fd does not take at once is queued and written
//    as it drains. The queue is bounded by `max_queued_bytes`; a Send that
//    would pass it fails and ends the link (the relay checks room itself
//    before it queues chunks, and drops them instead: WouldQueue).
//  - `max_bytes_per_second` caps what it writes (0: no cap): a slow link on
//    a fast machine, for the tests of the relay's losses, or a guest that
//    may use only so much of its host.
//  - On end of file, an error, POLLHUP or Close(), stops watching the fd and
//    reports `on_closed` from a fresh task, with the start of a frame cut off
//    half way in, if one was (chunks lost in transit, when it carried some).
//
// read() rather than recv(), and write() once send() says the fd is not a
// socket: the same code serves character devices. Loop thread only.
#ifndef SLUICE_SERVICE_RELAY_RELAY_LINK_H_
#define SLUICE_SERVICE_RELAY_RELAY_LINK_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "service/event_loop.h"
#include "service/ipc/ipc_frame.h"
#include "shm/base/scoped_fd.h"

namespace sluice {
namespace protos {
class RelayFrame;
}  // namespace protos

class RelayLink {
 public:
  struct Options {
    size_t max_queued_bytes = 64u << 20;
    uint64_t max_bytes_per_second = 0;
  };
  using FrameCallback = std::function<void(const protos::RelayFrame& frame)>;
  // `cut_frame`: the start of a frame the end cut off (empty if none).
  using ClosedCallback = std::function<void(const std::string& reason, std::string_view cut_frame)>;

  RelayLink(EventLoop* loop, ScopedFd fd, Options options, FrameCallback on_frame,
            ClosedCallback on_closed);
  ~RelayLink();
  RelayLink(const RelayLink&) = delete;
  RelayLink& operator=(const RelayLink&) = delete;

  void Start();
  // Queues one frame. False if the link is closed, or the queue would pass
  // its bound (then the link closes).
  bool Send(const protos::RelayFrame& frame);
  // Whether `bytes` more would fit the queue's bound.
  bool WouldQueue(size_t bytes) const { return !closed_ && queued_bytes_ + bytes <= options_.max_queued_bytes; }
  size_t queued_bytes() const { return queued_bytes_; }
  // Bytes queued since the link began, and of those, written to the fd: a
  // frame queued when bytes_queued() was Q and n bytes long was written
  // whole once bytes_written() >= Q + n.
  uint64_t bytes_queued() const { return bytes_queued_; }
  uint64_t bytes_written() const { return bytes_written_; }
  // Bytes of the peer's stream up to the end of the last whole frame read:
  // what the peer may count as delivered (RelayWelcome.previous_link_bytes).
  uint64_t frame_bytes_received() const { return frame_bytes_received_; }
  // The start of a frame read only in part so far (empty if none).
  std::string_view partial_frame() const { return reader_.buffered(); }
  bool closed() const { return closed_; }
  void Close(const std::string& reason);

 private:
  void OnEvents(uint32_t events);
  void ReadAvailable();
  void WriteQueued();
  void UpdateWatch();
  // Bytes the rate cap allows now (SIZE_MAX without a cap).
  size_t WriteBudget();

  EventLoop* const loop_;
  ScopedFd fd_;
  const Options options_;
  FrameCallback on_frame_;
  ClosedCallback on_closed_;
  FrameReader reader_;
  std::deque<std::string> output_;
  size_t output_offset_ = 0;  // Bytes of output_.front() written.
  size_t queued_bytes_ = 0;
  uint64_t bytes_queued_ = 0, bytes_written_ = 0, frame_bytes_received_ = 0;
  // The rate cap's bucket: bytes allowed, refilled from the boot clock.
  double tokens_ = 0;
  uint64_t tokens_at_ns_ = 0;
  uint64_t refill_timer_ = 0;
  bool is_socket_ = true;  // Until send() says ENOTSOCK.
  bool watching_ = false;
  bool want_write_ = false;
  bool closed_ = false;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_RELAY_RELAY_LINK_H_
