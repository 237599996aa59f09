// A producer that talks to sluiced as an app built with the Perfetto SDK's
// system backend does: Perfetto's IPC over the producer socket, its own SMB
// (a sealed memfd sent with InitializeConnection, producer_provided_shmem),
// a "track_event" data source, and track events written into the SMB as
// the SDK writes them (track descriptors, interned names and categories,
// nested slices, a counter, a flow). It uses sluice's SMB writer: the SMB
// ABI is Perfetto's.
//
// Threads: the test's thread connects and writes; a receive thread handles
// the service's commands (start, flush, stop). Sends are serialized.
#ifndef SLUICE_TESTS_SERVICE_IPC_SDK_STYLE_PRODUCER_TEST_UTIL_H_
#define SLUICE_TESTS_SERVICE_IPC_SDK_STYLE_PRODUCER_TEST_UTIL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "shm/base/scoped_fd.h"
#include "shm/base/status.h"
#include "shm/commit_data.h"
#include "shm/shared_memory.h"
#include "shm/shared_memory_arbiter.h"
#include "tests/service/ipc/perfetto_ipc_test_client.h"

namespace sluice::testing {

class SdkStyleProducer : public CommitDataSink {
 public:
  static constexpr char kDataSource[] = "track_event";
  static constexpr uint32_t kSmbBytes = 256 * 1024;
  static constexpr uint32_t kPageBytes = 4096;

  ~SdkStyleProducer() override;

  // Connects, initializes with its own SMB, registers kDataSource.
  Status Connect(const std::string& producer_socket);
  // Waits until the service started the data source.
  bool WaitForStart(int timeout_ms);
  // Writes the track events (see the .cc for what), then commits them.
  void WriteTrackEvents(uint64_t first_timestamp_ns);
  // Flushes answered so far (the service's Flush commands, each answered
  // with a CommitData that carries its id).
  int flushes_answered() const { return flushes_answered_.load(); }

  // CommitDataSink: as Perfetto's calls on the socket.
  void CommitData(const CommitDataRequest& request) override;
  void RegisterTraceWriter(uint16_t writer_id, uint32_t target_buffer) override;
  void UnregisterTraceWriter(uint16_t writer_id) override;

 private:
  void SendFrame(const std::string& frame, int fd = -1);
  // Reads the next frame (blocking); false at EOF or on error.
  bool ReadFrame(perfetto::protos::IPCFrame* frame);
  void ReceiveCommands();

  ScopedFd socket_;
  std::mutex send_mu_;
  PerfettoIpcTestClient client_;  // Under send_mu_.
  std::string read_buffer_;       // Receive thread (after Connect).
  std::unique_ptr<SharedMemory> smb_;
  std::unique_ptr<SharedMemoryArbiter> arbiter_;
  uint64_t stream_id_ = 0;
  std::thread receiver_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;    // Under mu_.
  uint32_t target_buffer_ = 0;
  std::atomic<int> flushes_answered_{0};
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_SERVICE_IPC_SDK_STYLE_PRODUCER_TEST_UTIL_H_
