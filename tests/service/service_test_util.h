// Helpers for the TracingService tests: a Producer that records what
// the service asks, test packets of a fixed size whose identity can be read
// back, and trace parsing.
//
// Test packets. With 4 KiB pages split in one chunk (kDiv1), a chunk has
// 4080 payload bytes. Each test packet is a TracePacket of exactly
// kTestPacketBytes bytes (a synchronization_marker holding the packet's id
// and filler), so with its 4-byte size header 8 packets fill a chunk up to
// 8 bytes: too few for the writer to start a 9th packet. No packet is ever
// fragmented, every full chunk holds kTestPacketsPerChunk packets, and the
// sequence's first packet (3 bytes more: first_packet_on_sequence) still fits.
#ifndef SLUICE_TESTS_SERVICE_SERVICE_TEST_UTIL_H_
#define SLUICE_TESTS_SERVICE_SERVICE_TEST_UTIL_H_

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "perfetto/config/data_source_config.pb.h"
#include "perfetto/config/trace_config.pb.h"
#include "perfetto/trace/trace.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "service/service_endpoints.h"
#include "shm/shared_memory_arbiter.h"
#include "shm/trace_writer.h"

namespace sluice::testing {

inline constexpr uint32_t kSyncMarkerField = 36;  // TracePacket.synchronization_marker
inline constexpr size_t kTestPacketBytes = 505;
inline constexpr size_t kTestMarkerBytes = kTestPacketBytes - 4;  // tag (2) + length (2)
inline constexpr uint32_t kTestPacketsPerChunk = 8;
inline constexpr uint32_t kTestMagic = 0x5100CE55u;

struct TestPacketId {
  uint32_t producer = 0;
  uint32_t writer = 0;
  uint32_t seq = 0;
  bool operator<(const TestPacketId& o) const {
    return std::tie(producer, writer, seq) < std::tie(o.producer, o.writer, o.seq);
  }
  bool operator==(const TestPacketId& o) const = default;
};

inline void WriteTestPacket(TraceWriter* writer, TestPacketId id) {
  uint8_t marker[kTestMarkerBytes];
  memset(marker, 0xab, sizeof(marker));
  uint32_t words[4] = {kTestMagic, id.producer, id.writer, id.seq};
  memcpy(marker, words, sizeof(words));
  auto packet = writer->NewTracePacket();
  packet->WriteBytes(kSyncMarkerField, marker, sizeof(marker));
}

inline bool ParseTestPacket(const perfetto::protos::TracePacket& packet, TestPacketId* id) {
  if (!packet.has_synchronization_marker()) return false;
  const std::string& m = packet.synchronization_marker();
  if (m.size() != kTestMarkerBytes) return false;
  uint32_t words[4];
  memcpy(words, m.data(), sizeof(words));
  if (words[0] != kTestMagic) return false;
  *id = TestPacketId{words[1], words[2], words[3]};
  return true;
}

// Polls `pred` every few ms until it holds; false after timeout_ms (a
// limit for when something is broken, not a duration the test relies on).
template <typename Pred>
bool WaitUntil(Pred pred, int timeout_ms = 60000) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// [begin, end): the packet numbers a test expects, in order.
inline std::vector<uint32_t> SeqRange(uint32_t begin, uint32_t end) {
  std::vector<uint32_t> out;
  for (uint32_t i = begin; i < end; i++) out.push_back(i);
  return out;
}

inline perfetto::protos::TraceConfig MakeConfig(uint32_t buffer_kb, const std::string& ds_name,
                                                bool discard = false) {
  perfetto::protos::TraceConfig config;
  auto* b = config.add_buffers();
  b->set_size_kb(buffer_kb);
  b->set_fill_policy(discard ? perfetto::protos::TraceConfig::BufferConfig::DISCARD
                             : perfetto::protos::TraceConfig::BufferConfig::RING_BUFFER);
  auto* ds = config.add_data_sources();
  ds->mutable_config()->set_name(ds_name);
  ds->mutable_config()->set_target_buffer(0);
  config.set_flush_timeout_ms(2000);
  return config;
}

inline std::vector<perfetto::protos::TracePacket> ReadAllPackets(ConsumerEndpoint* consumer) {
  std::vector<perfetto::protos::TracePacket> out;
  Status st = consumer->ReadBuffers([&](std::string_view bytes) {
    perfetto::protos::TracePacket p;
    p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
    out.push_back(std::move(p));
  });
  (void)st;
  return out;
}

inline std::vector<perfetto::protos::TracePacket> ParseTraceBytes(const std::string& bytes,
                                                                  bool* ok = nullptr) {
  perfetto::protos::Trace trace;
  bool parsed = trace.ParseFromString(bytes);
  if (ok) *ok = parsed;
  return std::vector<perfetto::protos::TracePacket>(trace.packet().begin(), trace.packet().end());
}

// A producer endpoint that records the service's requests and answers
// flushes like a real producer would (unless told not to). Works in process
// (callbacks on the service thread) and over IPC (callbacks on the
// ProducerIpcClient's receive thread): the callbacks use the connection and
// the arbiter under mu_, which Attach and Detach take to swap them.
class TestProducer : public Producer {
 public:
  struct Started {
    DataSourceInstanceId id;
    perfetto::protos::DataSourceConfig config;
  };

  ~TestProducer() override { Detach(); }

  void Attach(std::unique_ptr<ProducerEndpoint> connection, ArbiterOptions options = {}) {
    auto arbiter = std::make_unique<SharedMemoryArbiter>(
        connection->shm_start(), connection->shm_size(), connection->shm_page_size(),
        connection->commit_data_sink(), options);
    std::lock_guard<std::mutex> lock(mu_);
    connection_ = std::move(connection);
    arbiter_ = std::move(arbiter);
  }
  // Callbacks see neither from now on. Then the arbiter first: it commits
  // its last chunks through the connection; destroying the connection waits
  // for a callback that is running.
  void Detach() {
    std::unique_ptr<SharedMemoryArbiter> arbiter;
    std::unique_ptr<ProducerEndpoint> connection;
    {
      std::lock_guard<std::mutex> lock(mu_);
      arbiter = std::move(arbiter_);
      connection = std::move(connection_);
    }
    arbiter.reset();
    connection.reset();
  }
  // Connects to `service` (a TracingService) as `name` and, unless
  // `data_source` is empty, registers it (will_notify_on_stop).
  template <typename Service>
  ::testing::AssertionResult ConnectTo(Service* service, const std::string& name,
                                       const std::string& data_source = "test.ds") {
    auto conn = service->ConnectProducer(this, ProducerOptions{name, 0, 0});
    if (!conn.ok()) return ::testing::AssertionFailure() << conn.status().message();
    Attach(std::move(conn.value()));
    if (!data_source.empty()) {
      DataSourceDescriptor d;
      d.name = data_source;
      d.will_notify_on_stop = true;
      connection()->RegisterDataSource(d);
    }
    return ::testing::AssertionSuccess();
  }
  ProducerEndpoint* connection() { return connection_.get(); }
  SharedMemoryArbiter* arbiter() { return arbiter_.get(); }

  void set_answer_flushes(bool answer) {
    std::lock_guard<std::mutex> lock(mu_);
    answer_flushes_ = answer;
  }
  void set_ack_stops(bool ack) {
    std::lock_guard<std::mutex> lock(mu_);
    ack_stops_ = ack;
  }
  // Runs on every Flush before it is answered, as a data source flushes its
  // writers (the test's writers must not be in use on another thread then).
  void set_on_flush(std::function<void()> on_flush) {
    std::lock_guard<std::mutex> lock(mu_);
    on_flush_ = std::move(on_flush);
  }

  bool WaitForStart(Started* out, int timeout_ms = 5000) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return !starts_.empty(); }))
      return false;
    *out = starts_.front();
    starts_.pop_front();
    return true;
  }
  template <typename Pred>
  bool WaitFor(Pred pred, int timeout_ms = 5000) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return pred(*this); });
  }

  // Counters (read under WaitFor or after the fact).
  int setups = 0, stops = 0, flushes = 0, clears = 0, disconnects = 0;
  std::string disconnect_reason;

  // Producer.
  void SetupDataSource(DataSourceInstanceId, const perfetto::protos::DataSourceConfig&) override {
    std::lock_guard<std::mutex> lock(mu_);
    setups++;
    cv_.notify_all();
  }
  void StartDataSource(DataSourceInstanceId id,
                       const perfetto::protos::DataSourceConfig& config) override {
    std::lock_guard<std::mutex> lock(mu_);
    starts_.push_back(Started{id, config});
    cv_.notify_all();
  }
  void StopDataSource(DataSourceInstanceId id) override {
    std::lock_guard<std::mutex> lock(mu_);
    stops++;
    cv_.notify_all();
    if (ack_stops_ && connection_) connection_->NotifyDataSourceStopped(id);
  }
  void Flush(FlushRequestId id, const std::vector<DataSourceInstanceId>&) override {
    std::lock_guard<std::mutex> lock(mu_);
    flushes++;
    cv_.notify_all();
    if (on_flush_) on_flush_();
    if (answer_flushes_ && arbiter_) arbiter_->FlushPendingCommitData(id);
  }
  void ClearIncrementalState(const std::vector<DataSourceInstanceId>&) override {
    std::lock_guard<std::mutex> lock(mu_);
    clears++;
    cv_.notify_all();
  }
  void OnDisconnect(const std::string& reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    disconnects++;
    disconnect_reason = reason;
    cv_.notify_all();
  }
  void OnTriggersActivated(uint32_t sessions_triggered) override {
    std::lock_guard<std::mutex> lock(mu_);
    trigger_answers_.push_back(sessions_triggered);
    cv_.notify_all();
  }

  // Fires `names` and waits for the service's answer: the number of
  // sessions that acted on them (-1: no answer).
  int FireTriggers(const std::vector<std::string>& names, int timeout_ms = 60000) {
    size_t before;
    {
      std::lock_guard<std::mutex> lock(mu_);
      before = trigger_answers_.size();
    }
    connection()->ActivateTriggers(names);
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                      [&] { return trigger_answers_.size() > before; }))
      return -1;
    return static_cast<int>(trigger_answers_[before]);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Started> starts_;
  std::vector<uint32_t> trigger_answers_;
  bool answer_flushes_ = true;
  bool ack_stops_ = true;
  std::function<void()> on_flush_;
  std::unique_ptr<ProducerEndpoint> connection_;
  std::unique_ptr<SharedMemoryArbiter> arbiter_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_SERVICE_SERVICE_TEST_UTIL_H_
