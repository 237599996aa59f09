#include "service/relay/relay_link.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "shm/base/clock.h"
#include "sluice/relay.pb.h"

namespace sluice {

RelayLink::RelayLink(EventLoop* loop, ScopedFd fd, Options options, FrameCallback on_frame,
                     ClosedCallback on_closed)
    : loop_(loop),
      fd_(std::move(fd)),
      options_(options),
      on_frame_(std::move(on_frame)),
      on_closed_(std::move(on_closed)) {}

RelayLink::~RelayLink() {
  *alive_ = false;
  if (watching_) loop_->RemoveFdWatch(fd_.get());
  if (refill_timer_) loop_->CancelDelayedTask(refill_timer_);
}

void RelayLink::Start() {
  tokens_at_ns_ = BootTimeNs();
  tokens_ = 0;
  watching_ = true;
  loop_->AddFdWatch(fd_.get(), EPOLLIN, [this](uint32_t events) { OnEvents(events); });
}

bool RelayLink::Send(const protos::RelayFrame& frame) {
  if (closed_) return false;
  std::string bytes;
  std::string payload = frame.SerializeAsString();
  AppendFrame(payload, &bytes);
  if (queued_bytes_ + bytes.size() > options_.max_queued_bytes && queued_bytes_ > 0) {
    Close("the peer does not read the link (" + std::to_string(queued_bytes_) + " bytes queued)");
    return false;
  }
  queued_bytes_ += bytes.size();
  bytes_queued_ += bytes.size();
  output_.push_back(std::move(bytes));
  WriteQueued();
  return !closed_;
}

void RelayLink::Close(const std::string& reason) {
  if (closed_) return;
  closed_ = true;
  if (watching_) {
    loop_->RemoveFdWatch(fd_.get());
    watching_ = false;
  }
  std::string cut(reader_.buffered().substr(0, 64));
  std::weak_ptr<bool> alive = alive_;
  loop_->PostTask([this, alive, reason, cut] {
    auto a = alive.lock();
    if (a && *a && on_closed_) on_closed_(reason, cut);
  });
}

void RelayLink::OnEvents(uint32_t events) {
  if (events & EPOLLOUT) WriteQueued();
  if (closed_) return;
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) ReadAvailable();
}

void RelayLink::ReadAvailable() {
  for (int round = 0; round < 64 && !closed_; round++) {
    size_t room = 0;
    uint8_t* dst = reader_.WritableSpace(64u << 10, &room);
    ssize_t n = read(fd_.get(), dst, room);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      Close(n == 0 ? "the peer closed the link" : std::string("read: ") + strerror(errno));
      return;
    }
    reader_.CommitWritten(static_cast<size_t>(n));
    std::string_view payload;
    for (;;) {
      FrameReader::Result r = reader_.NextFrame(&payload);
      if (r == FrameReader::Result::kNeedMore) break;
      if (r == FrameReader::Result::kError) {
        Close("a frame longer than " + std::to_string(kMaxFrameSize) + " bytes");
        return;
      }
      frame_bytes_received_ += kFrameHeaderSize + payload.size();
      protos::RelayFrame frame;
      if (!frame.ParseFromArray(payload.data(), static_cast<int>(payload.size())) ||
          frame.msg_case() == protos::RelayFrame::MSG_NOT_SET) {
        Close("a frame that is not a RelayFrame");
        return;
      }
      on_frame_(frame);
      if (closed_) return;
    }
  }
}

size_t RelayLink::WriteBudget() {
  if (options_.max_bytes_per_second == 0) return std::numeric_limits<size_t>::max();
  const uint64_t now = BootTimeNs();
  const double rate = static_cast<double>(options_.max_bytes_per_second);
  tokens_ += rate * static_cast<double>(now - tokens_at_ns_) / 1e9;
  tokens_at_ns_ = now;
  // At most a tenth of a second's worth saved up: the cap holds over short
  // spans too.
  tokens_ = std::min(tokens_, std::max(rate / 10, 4096.0));
  return tokens_ < 1 ? 0 : static_cast<size_t>(tokens_);
}

void RelayLink::WriteQueued() {
  while (!output_.empty() && !closed_) {
    const std::string& front = output_.front();
    size_t budget = WriteBudget();
    if (budget == 0) {
      // Out of tokens: wake when enough for a page came back.
      if (!refill_timer_) {
        const uint64_t wait_ms = std::max<uint64_t>(1, 4096 * 1000 / options_.max_bytes_per_second);
        std::weak_ptr<bool> alive = alive_;
        refill_timer_ = loop_->PostDelayedTask(
            [this, alive] {
              auto a = alive.lock();
              if (!a || !*a) return;
              refill_timer_ = 0;
              WriteQueued();
            },
            static_cast<uint32_t>(std::min<uint64_t>(wait_ms, 100)));
      }
      want_write_ = false;
      UpdateWatch();
      return;
    }
    const size_t len = std::min(front.size() - output_offset_, budget);
    // send() where it can (MSG_NOSIGNAL: a peer gone is an error, not a
    // SIGPIPE for whoever embeds the link); write() on a character device.
    ssize_t n = is_socket_ ? send(fd_.get(), front.data() + output_offset_, len, MSG_NOSIGNAL)
                           : write(fd_.get(), front.data() + output_offset_, len);
    if (n < 0 && errno == ENOTSOCK) {
      is_socket_ = false;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      want_write_ = true;
      UpdateWatch();
      return;
    }
    if (n <= 0) {
      Close(std::string("write: ") + strerror(n < 0 ? errno : EIO));
      return;
    }
    if (options_.max_bytes_per_second) tokens_ -= static_cast<double>(n);
    output_offset_ += static_cast<size_t>(n);
    queued_bytes_ -= static_cast<size_t>(n);
    bytes_written_ += static_cast<uint64_t>(n);
    if (output_offset_ == front.size()) {
      output_.pop_front();
      output_offset_ = 0;
    }
  }
  want_write_ = false;
  UpdateWatch();
}

void RelayLink::UpdateWatch() {
  if (!watching_ || closed_) return;
  loop_->SetFdWatchEvents(fd_.get(), EPOLLIN | (want_write_ ? EPOLLOUT : 0u));
}

}  // namespace sluice
