// An IpcChannel without a socket for the tests of the Perfetto ports.
#ifndef SLUICE_TESTS_SERVICE_IPC_RECORDING_CHANNEL_H_
#define SLUICE_TESTS_SERVICE_IPC_RECORDING_CHANNEL_H_

#include <fcntl.h>
#include <unistd.h>

#include <mutex>
#include <string>
#include <vector>

#include "perfetto/ipc/wire_protocol.pb.h"
#include "service/ipc/ipc_connection.h"

namespace sluice::testing {

// Keeps every frame the port sends (as IPCFrames) and the fds that went with
// them; hands the port the fds the test queued as received. The port sends
// from the service thread, the test reads from its own: under a mutex.
class RecordingChannel : public IpcChannel {
 public:
  RecordingChannel() {
    peer_.uid = getuid();
    peer_.pid = getpid();
  }
  void Send(const google::protobuf::MessageLite& envelope, int fd) override {
    std::lock_guard<std::mutex> lock(mu_);
    frames_.emplace_back();
    frames_.back().ParseFromString(envelope.SerializeAsString());
    fds_.emplace_back(fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1);
  }
  ScopedFd TakeReceivedFd() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (received_.empty()) return ScopedFd();
    ScopedFd fd = std::move(received_.front());
    received_.erase(received_.begin());
    return fd;
  }
  const PeerCredentials& peer() const override { return peer_; }
  void Close(const std::string& reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    close_reason_ = reason;
  }

  void QueueReceivedFd(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    received_.emplace_back(fcntl(fd, F_DUPFD_CLOEXEC, 0));
  }
  size_t num_frames() {
    std::lock_guard<std::mutex> lock(mu_);
    return frames_.size();
  }
  perfetto::protos::IPCFrame frame(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return frames_.at(i);
  }
  ScopedFd TakeFd(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(fds_.at(i));
  }
  bool closed() {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }
  std::string close_reason() {
    std::lock_guard<std::mutex> lock(mu_);
    return close_reason_;
  }

 private:
  std::mutex mu_;
  std::vector<perfetto::protos::IPCFrame> frames_;
  std::vector<ScopedFd> fds_;
  std::vector<ScopedFd> received_;
  bool closed_ = false;
  std::string close_reason_;
  PeerCredentials peer_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_SERVICE_IPC_RECORDING_CHANNEL_H_
