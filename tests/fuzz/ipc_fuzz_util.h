// Shared by the service fuzzers: an IpcChannel without a socket, and a
// producer endpoint that answers like a cooperative producer.
#ifndef SLUICE_TESTS_FUZZ_IPC_FUZZ_UTIL_H_
#define SLUICE_TESTS_FUZZ_IPC_FUZZ_UTIL_H_

#include <fcntl.h>
#include <unistd.h>

#include "service/ipc/ipc_connection.h"
#include "service/service_endpoints.h"

namespace sluice {

class FakeChannel : public IpcChannel {
 public:
  FakeChannel() {
    peer_.uid = getuid();
    peer_.gid = getgid();
    peer_.pid = getpid();
  }
  void Send(const google::protobuf::MessageLite&, int fd) override {
    sent++;
    if (fd >= 0) last_fd.reset(fcntl(fd, F_DUPFD_CLOEXEC, 0));
  }
  ScopedFd TakeReceivedFd() override { return ScopedFd(); }
  const PeerCredentials& peer() const override { return peer_; }
  void Close(const std::string&) override { closed = true; }

  int sent = 0;
  bool closed = false;
  ScopedFd last_fd;

 private:
  PeerCredentials peer_;
};

// Acks flushes at once (so that a session can finish without timers).
class AckingEndpoint : public Producer {
 public:
  void SetupDataSource(DataSourceInstanceId, const perfetto::protos::DataSourceConfig&) override {}
  void StartDataSource(DataSourceInstanceId, const perfetto::protos::DataSourceConfig&) override {}
  void StopDataSource(DataSourceInstanceId) override {}
  void Flush(FlushRequestId id, const std::vector<DataSourceInstanceId>&) override {
    if (connection) connection->NotifyFlushComplete(id);
  }
  void ClearIncrementalState(const std::vector<DataSourceInstanceId>&) override {}
  ProducerEndpoint* connection = nullptr;
};

}  // namespace sluice

#endif  // SLUICE_TESTS_FUZZ_IPC_FUZZ_UTIL_H_
