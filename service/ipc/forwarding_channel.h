// ForwardingChannel: an IpcChannel that hands everything but Send to
// another channel. The Perfetto ports (perfetto_producer_port.h,
// perfetto_consumer_port.h) are the channel of the sluice port they wrap:
// they turn its messages into Perfetto's (Send) and leave flow control,
// received fds, credentials and closing to the real connection, one
// Perfetto frame per sluice frame, so that frame numbers and PeerHasRead
// keep their meaning.
#ifndef SLUICE_SERVICE_IPC_FORWARDING_CHANNEL_H_
#define SLUICE_SERVICE_IPC_FORWARDING_CHANNEL_H_

#include <functional>
#include <string>
#include <utility>

#include "service/ipc/ipc_connection.h"

namespace sluice {

class ForwardingChannel : public IpcChannel {
 public:
  explicit ForwardingChannel(IpcChannel* channel) : channel_(channel) {}

  uint64_t frames_sent() const override { return channel_->frames_sent(); }
  bool PeerHasRead(uint64_t frame) override { return channel_->PeerHasRead(frame); }
  size_t queued_output_bytes() const override { return channel_->queued_output_bytes(); }
  void NotifyWhenOutputAtMost(size_t bytes, std::function<void()> fn) override {
    channel_->NotifyWhenOutputAtMost(bytes, std::move(fn));
  }
  ScopedFd TakeReceivedFd() override { return channel_->TakeReceivedFd(); }
  const PeerCredentials& peer() const override { return channel_->peer(); }
  void Close(const std::string& reason) override { channel_->Close(reason); }

 protected:
  IpcChannel* const channel_;
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_FORWARDING_CHANNEL_H_
