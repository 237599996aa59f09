// ProducerIpcClient: a producer's connection to sluiced over the producer
// socket. It implements ProducerEndpoint (and CommitDataSink), so a
// producer written against the in-process TracingService::ConnectProducer
// works unchanged across processes.
//
// Connect() is synchronous: it sends InitializeConnection, waits for the
// answer and maps the SMB memfd that came with it (SharedMemory::Attach).
// Afterwards a receive thread owned by the client reads ServiceToProducer
// frames and calls the Producer, one call at a time, in order.
//
// Sending (commits, registrations, acks) may happen from any thread: a mutex
// serialises whole frames, and the socket is blocking, so a commit returns
// once the kernel took the bytes. The service reads producer sockets
// promptly and never blocks on them, so this does not deadlock with the
// receive thread.
//
// If the service goes away, Producer::OnDisconnect is called once and
// later sends are dropped.
//
// Destroy the client only after the SharedMemoryArbiter that uses its SMB,
// and never from inside a Producer callback (the receive thread
// would join itself).
#ifndef SLUICE_SERVICE_IPC_PRODUCER_IPC_CLIENT_H_
#define SLUICE_SERVICE_IPC_PRODUCER_IPC_CLIENT_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "service/ipc/ipc_socket.h"
#include "service/service_endpoints.h"
#include "shm/shared_memory.h"

namespace google::protobuf {
class MessageLite;
}

namespace sluice {

class ProducerIpcClient : public ProducerEndpoint, public CommitDataSink {
 public:
  static constexpr uint32_t kConnectTimeoutMs = 10000;

  static StatusOr<std::unique_ptr<ProducerIpcClient>> Connect(const std::string& socket_path,
                                                              Producer* endpoint,
                                                              const ProducerOptions& options);
  ~ProducerIpcClient() override;

  // ProducerEndpoint.
  uint8_t* shm_start() const override { return shm_->start(); }
  uint32_t shm_size() const override { return shm_->size(); }
  uint32_t shm_page_size() const override { return page_size_; }
  CommitDataSink* commit_data_sink() override { return this; }
  void RegisterDataSource(const DataSourceDescriptor& descriptor) override;
  void UnregisterDataSource(const std::string& name) override;
  void NotifyDataSourceStarted(DataSourceInstanceId id) override;
  void NotifyDataSourceStopped(DataSourceInstanceId id) override;
  void NotifyFlushComplete(FlushRequestId id) override;
  void ActivateTriggers(const std::vector<std::string>& names) override;

  // CommitDataSink.
  void CommitData(const CommitDataRequest& request) override;
  void RegisterTraceWriter(uint16_t writer_id, uint32_t target_buffer) override;
  void UnregisterTraceWriter(uint16_t writer_id) override;

  bool connected() const { return connected_.load(std::memory_order_acquire); }
  // Raw access for tests that play a misbehaving producer: sends `bytes` as
  // they are (no framing added).
  bool SendRawForTesting(const std::string& bytes);

 private:
  ProducerIpcClient(ScopedFd socket, Producer* endpoint);
  void Send(const google::protobuf::MessageLite& envelope);
  void ReceiveLoop();

  ScopedFd socket_;
  Producer* const endpoint_;
  std::unique_ptr<SharedMemory> shm_;
  uint32_t page_size_ = 0;
  std::mutex send_mu_;
  std::atomic<bool> connected_{true};
  std::atomic<bool> shutting_down_{false};
  std::thread receiver_;
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_PRODUCER_IPC_CLIENT_H_
