// RelayProducerHost: the guest's end of a relay (`sluice-relay`). It takes
// the guest's producers on the usual producer socket, with the ports
// sluiced uses (IpcServer::CreateForProducers: sluice's own protocol and
// Perfetto's), owns their shared memory as sluiced would, and instead of
// copying what they commit into buffers of its own, moves it to the host's
// sluiced over one byte stream (RelayLink, protos/sluice/relay.proto):
//
//   guest producer ──SMB──▶ RelayProducerHost ──link──▶ host sluiced
//                                                        (RelayServer)
//
// Shared memory cannot cross the machine boundary, so the relay copies
// each committed chunk out (ReadChunkUntrusted, which frees it in the SMB)
// and sends its bytes with the commit's patches and flush answer; the host
// checks the bytes as it checks an SMB's. The host's calls (setup, start,
// stop, flush, clear incremental state) come down the link and go to the
// producer named by its slot.
//
// Flow. What the link has not taken yet is queued, up to
// RelayOptions.buffer_bytes of chunks; past that, and while the link is
// down, the relay drops whole chunks (never control messages) and counts
// them by target buffer: chunks, packets (from their headers) and bytes.
// The counts go to the host (RelayLosses, deltas) before the producer's
// next flush answer and at least once a second while there are some; the
// host puts them in the trace (TraceStats relay_machines; upstream's
// traced_buf_trace_writer_packet_loss of the machine). Patches of a dropped
// chunk are dropped with it.
//
// Links. The relay connects and says hello (its machine name), then runs a
// burst of clock sync rounds (relay_clock_sync.h) before it announces any
// producer, so that the trace has the machine's clocks before its data;
// then a burst every clock_sync_period_ms. When the link ends it stops
// every data source the host had started (their data would have nowhere to
// go), and reconnects (every reconnect_ms, then less often); the host
// starts them again for the sessions still running. A chunk meant for a
// buffer the host has not named on the current link is dropped and counted.
//
// Loop thread only (the ports run there too).
#ifndef SLUICE_SERVICE_RELAY_RELAY_PRODUCER_HOST_H_
#define SLUICE_SERVICE_RELAY_RELAY_PRODUCER_HOST_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "perfetto/trace/clock_snapshot.pb.h"
#include "service/producer_host.h"
#include "service/relay/relay_address.h"
#include "service/relay/relay_link.h"

namespace sluice {
namespace protos {
class RelayFrame;
}  // namespace protos

struct RelayOptions {
  RelayAddress to;
  std::string machine_name;  // Hostname when empty.
  // Chunks queued for the link at most; more are dropped (counted).
  size_t buffer_bytes = 8u << 20;
  uint64_t max_bytes_per_second = 0;  // 0: as fast as the link goes.
  uint32_t clock_sync_period_ms = 30000;
  uint32_t reconnect_ms = 500;
  // SMB sizes, as sluiced's (TracingServiceOptions).
  uint32_t default_shm_size_bytes = 256 * 1024;
  uint32_t min_shm_size_bytes = 64 * 1024;
  uint32_t max_shm_size_bytes = 32 * 1024 * 1024;
  uint32_t default_shm_page_size_bytes = 4096;
  std::function<void(const std::string&)> log;
};

class RelayProducerHost : public ProducerHost {
 public:
  static constexpr uint32_t kBurstRounds = 8;
  static constexpr uint32_t kPeriodicRounds = 4;

  struct Totals {
    uint64_t chunks_forwarded = 0;
    uint64_t bytes_forwarded = 0;
    uint64_t chunks_dropped = 0;
    uint64_t packets_dropped = 0;
    uint64_t bytes_dropped = 0;
    uint64_t links = 0;          // Links that got the host's welcome.
    uint64_t clock_rounds = 0;
    uint64_t producers_seen = 0;
  };

  RelayProducerHost(EventLoop* loop, RelayOptions options);
  ~RelayProducerHost() override;
  // Connects (and keeps reconnecting). Loop thread.
  void Start();
  const Totals& totals() const { return totals_; }
  bool announced() const { return announced_; }
  uint32_t machine_id() const { return machine_id_; }

  // ProducerHost.
  StatusOr<std::unique_ptr<ProducerEndpoint>> ConnectProducer(Producer* endpoint,
                                                              const ProducerOptions& options,
                                                              const PeerCredentials& peer,
                                                              int* shm_fd) override;
  void CountDroppedIpcConnection() override {}
  void CountProducerNotReading(Producer*, const std::string& why) override;
  EventLoop* loop() const override { return loop_; }
  void LogLine(const std::string& line) const override;

 private:
  class GuestProducer;
  friend class GuestProducer;
  struct Loss {
    uint64_t chunks = 0, packets = 0, bytes = 0;
  };

  void Connect();
  void ScheduleReconnect();
  void OnFrame(const protos::RelayFrame& frame);
  void OnLinkClosed(const std::string& reason);
  void StartClockBurst(uint32_t rounds);
  void SendPing();
  void OnPong(uint64_t round);
  void SchedulePeriodicSync();
  void Announce(GuestProducer* p);
  void ToProducer(const protos::RelayFrame& frame);
  // Sends `frame` if the link is up and the producer announced on it.
  bool SendFor(const GuestProducer* p, const protos::RelayFrame& frame);
  void ForwardCommit(GuestProducer* p, const CommitDataRequest& request);
  // Drops a chunk (counted).
  void Drop(uint32_t target, uint16_t packets, size_t bytes, uint16_t writer, uint32_t chunk_id);
  // Counts a loss for the host (sent within a second, or on the next link).
  void AddLoss(uint32_t target, uint64_t chunks, uint64_t packets, uint64_t bytes);
  void SendLosses();
  void ProducerGone(GuestProducer* p);

  EventLoop* const loop_;
  RelayOptions options_;
  std::unique_ptr<RelayLink> link_;
  uint32_t machine_id_ = 0;    // From the welcome; 0 before.
  bool announced_ = false;     // The first burst is done on this link.
  uint64_t reconnect_timer_ = 0;
  uint32_t reconnect_delay_ms_ = 0;
  bool logged_connect_failure_ = false;
  // The clock burst under way: rounds left, the round's id and t1c.
  uint32_t burst_rounds_left_ = 0;
  uint64_t round_ = 0;
  perfetto::protos::ClockSnapshot t1c_;
  uint64_t sync_timer_ = 0;
  uint64_t losses_timer_ = 0;
  std::map<uint32_t, GuestProducer*> producers_;  // By slot.
  uint32_t next_slot_ = 1;
  std::map<uint32_t, Loss> pending_losses_;  // By target buffer, not sent yet.
  // Commit frames queued on the link and not known written yet: where they
  // lie in the link's byte stream and their chunks by target buffer. Those
  // a link ends before writing are counted as dropped.
  struct QueuedCommit {
    uint64_t start = 0, end = 0;
    std::map<uint32_t, Loss> chunks;
  };
  std::deque<QueuedCommit> queued_commits_;
  // The previous link's, until the host's welcome says how much of it
  // arrived (RelayWelcome.previous_link_bytes).
  std::deque<QueuedCommit> unconfirmed_commits_;
  bool pending_cut_frame_ = false;  // The next RelayLosses includes_cut_frame.
  // (writer << 32 | chunk id) of recently dropped chunks: their patches go too.
  std::set<uint64_t> dropped_chunks_;
  std::deque<uint64_t> dropped_order_;
  std::unique_ptr<uint8_t[]> scratch_;
  Totals totals_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_RELAY_RELAY_PRODUCER_HOST_H_
