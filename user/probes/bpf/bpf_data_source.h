// BpfDataSource: the `linux.bpf` data source. Kernel events captured by BPF
// programs (bpf/*.bpf.c) reach the trace as the same FtraceEvent messages the
// linux.ftrace source writes, in FtraceEventBundles per CPU.
//
//   kernel                          this class (one reader thread)
//   ──────────────────────────      ──────────────────────────────────────────
//   tracepoint ─▶ BPF program       epoll_wait(ring fds + control eventfd,
//     filters (pid/tgid/comm,         timeout = drain_period_ms)
//     rate) ─▶ reserve in the       ring_buffer__consume(): per record
//     CPU's ring ─▶ submit            BpfBundleWriter[cpu].Append()
//     (wake-up only when the          (decode, user/probes/bpf/bpf_event_decoder.h)
//     ring's fill crosses the       end of cycle: close bundles, read the
//     threshold)                      drop counters, flag lost_events on the
//                                     next bundle of a CPU that dropped
//
// Writers. `make_writer` is called once per online CPU (that CPU's bundles
// form one sequence) and once more for the stats packets, all in Create().
// Only the reader thread writes to them while it runs; Flush() and Stop()
// hand over through the control channel and a join, so the writers are
// never used by two threads at once.
//
// Accounting. Per CPU, the BPF programs count every record they try to put
// in a ring (produced) and every one they could not (dropped); user space
// counts every record it reads (delivered). A BpfStats packet (protos/
// sluice/bpf.proto) carries them at every Flush() and at Stop(). Stop()
// detaches the programs first and drains until the rings are empty, so in
// the END packet produced == delivered + dropped holds exactly. Next to
// each, PerfSample packets carry the records each CPU lost, the form
// upstream's trace_processor reads (user/probes/bpf/bpf_lost_records.h).
//
// Lifecycle: Create() (checks, loads the programs; one-line errors) →
// Start() (attaches, starts the reader) → Flush()* → Stop(). The destructor
// stops. Create() and Start() can fail; Flush() and Stop() cannot.
//
// Thread-safety: Start/Flush/Stop from one control thread; stats() from
// any thread.
#ifndef SLUICE_USER_PROBES_BPF_BPF_DATA_SOURCE_H_
#define SLUICE_USER_PROBES_BPF_BPF_DATA_SOURCE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "shm/base/atomic_stats.h"
#include "shm/base/scoped_fd.h"
#include "shm/base/status.h"
#include "shm/trace_writer.h"
#include "user/probes/bpf/bpf_bundle_writer.h"
#include "user/probes/bpf/bpf_loader.h"
#include "user/probes/bpf/bpf_settings.h"

struct ring_buffer;

namespace sluice {
namespace protos {
class BpfConfig;
}  // namespace protos

struct BpfDataSourceOptions {
  enum class RingMode : uint8_t {
    kPerCpu,  // one ring per CPU (default; see docs/PERFORMANCE.md)
    kShared,  // one ring for all CPUs
  };
  RingMode ring_mode = RingMode::kPerCpu;
  // The reader drains at least this often, even if no ring woke it.
  uint32_t drain_period_ms = 100;
  // Wake the reader when a ring is this full; 0 = kernel default policy
  // (a wake-up whenever the reader caught up: up to one per event).
  uint32_t wakeup_fill_percent = 25;
  uint32_t max_events_per_bundle = BpfBundleWriter::kDefaultMaxEvents;
  // tracefs instances whose trace_marker writes become print events
  // ("" = the root instance), unless BpfConfig.trace_marker_instances is set.
  std::vector<std::string> marker_instances = {""};
  std::string tracefs_root;  // "" = find it
  bool force_tracepoint = false;         // tests: classic tracepoints only
  bool force_marker_tracepoint = false;  // tests: no fentry probe
  bool fentry_on_rt = false;             // see BpfLoaderOptions
  bool verbose = false;                  // libbpf debug output to stderr
  bool enable_run_time_stats = false;    // benchmarks: BPF program run time
  std::function<void(const std::string&)> warn;  // default: stderr
};

// What the reader thread counts per CPU. Kept in AtomicStats (the reader
// counts, stats() reads), so uint64_t fields only.
struct BpfReaderCpuStats {
  uint64_t delivered = 0;      // records read from the ring (decoded or not)
  uint64_t decode_errors = 0;  // delivered records that could not be decoded
};

// One CPU's counters: the programs' own struct, as the map holds it
// (struct sluice_cpu_stats, bpf/sluice_record.h: produced, dropped,
// filtered_*, marker_*, wakeups), next to the reader's. No copy of the
// kernel's fields: a counter added to the C struct is here, summed and
// compared without a change; only its proto field is named, once, in
// WriteCpuStats() (bpf_data_source.cc).
struct BpfCpuStats : sluice_cpu_stats, BpfReaderCpuStats {
  // The C struct has no initialisers: zero it, so that a default-constructed
  // BpfCpuStats is all zeros like the reader's part.
  BpfCpuStats() : sluice_cpu_stats{}, BpfReaderCpuStats{} {}

  // Adds every counter of `other`, word by word.
  BpfCpuStats& operator+=(const BpfCpuStats& other);
  // True if every counter is zero (nothing happened on this CPU).
  bool all_zero() const;
};

// What the reader thread counts for the whole source (AtomicStats too).
struct BpfReaderStats {
  uint64_t drain_cycles = 0;
  // Reader thread CPU time (user + system), ns: for the benchmarks.
  uint64_t reader_cpu_ns = 0;
  // Shared ring only: records read but not attributable to a CPU with a
  // writer (included in total.delivered, not in per_cpu).
  uint64_t unrouted = 0;
  // Times the reader stopped reading the rings because the producer's SMB
  // had no room, and how long it waited so (BpfDataSource::ReaderLoop).
  uint64_t smb_full_waits = 0;
  uint64_t smb_full_wait_us = 0;
};

struct BpfSourceStats : BpfReaderStats {
  std::vector<BpfCpuStats> per_cpu;  // index = CPU
  BpfCpuStats total;
  uint64_t stats_packets = 0;
  // Program invocations the kernel skipped (BpfLoader::ReadMisses): events
  // lost before a program could count them; CPU unknown.
  uint64_t program_misses = 0;
};

class BpfDataSource {
 public:
  using MakeWriter = std::function<std::unique_ptr<TraceWriter>()>;

  static StatusOr<std::unique_ptr<BpfDataSource>> Create(const protos::BpfConfig& config,
                                                         MakeWriter make_writer,
                                                         const BpfDataSourceOptions& options);
  ~BpfDataSource();
  BpfDataSource(const BpfDataSource&) = delete;
  BpfDataSource& operator=(const BpfDataSource&) = delete;

  Status Start();
  // Drains the rings, writes a BpfStats packet and flushes every writer;
  // returns when done (or after 5 s if the reader is stuck).
  void Flush();
  // Detaches the programs, drains everything, writes the final BpfStats
  // packet, flushes, frees the programs and rings. Idempotent.
  void Stop();

  BpfSourceStats stats() const;  // thread-safe
  const BpfAttachInfo& attach_info() const { return loader_info_; }
  // Summed BPF program run time (needs options.enable_run_time_stats).
  Status ReadRunStats(uint64_t* run_time_ns, uint64_t* run_count) const;

  // For tests: stop and resume reading the rings (the programs keep
  // producing; a full ring drops).
  void PauseReadingForTesting();
  void ResumeReadingForTesting();

 private:
  struct RingCtx {
    BpfDataSource* self;
    int cpu;  // -1: shared ring, route by the record's cpu
  };
  // kNoRoom: the SMB had no room, so records were left in the ring (where
  // the programs count what does not fit as dropped, per CPU).
  enum class DrainResult { kEmpty, kBudgetHit, kNoRoom };

  BpfDataSource() = default;
  Status Init(const protos::BpfConfig& config, MakeWriter make_writer,
              const BpfDataSourceOptions& options);
  // Init()'s steps, in its order.
  StatusOr<BpfLoaderOptions> LoaderOptions(const protos::BpfConfig& config) const;
  Status CreateWriters(const MakeWriter& make_writer);
  Status OpenRingReader();
  Status SetUpEpoll();
  void ReaderLoop();
  // One cycle of at most kRecordsPerCycle records. `ask_room`: stop when
  // the writers' SMB has no room (a flush and the final drain stop asking
  // once FlushRoomWait gives up: they must end).
  DrainResult Drain(bool ask_room);
  // Drain() until the rings are empty or the SMB has no room (kEmpty or
  // kNoRoom). `*took`: records were consumed.
  DrainResult DrainAll(bool ask_room, bool* took);
  // Whether the room credit holds the largest record, asking the writers
  // for more when it does not.
  bool HaveRoom();
  void AfterDrain();
  void WriteStatsPacket(bool final_phase);
  void WriteLostRecordsPackets(const BpfSourceStats& counters, bool final_phase);
  void FlushWriters();
  void Signal();
  BpfSourceStats ReadCountersLocked() const;
  static int OnRecord(void* ctx, void* data, size_t size);

  BpfDataSourceOptions options_;
  BpfSettings settings_;
  std::unique_ptr<BpfLoader> loader_;  // guarded by mu_ for stats()
  BpfAttachInfo loader_info_;
  uint32_t num_cpus_ = 0;

  std::vector<std::unique_ptr<TraceWriter>> writers_;  // per CPU
  std::unique_ptr<TraceWriter> stats_writer_;
  std::vector<std::unique_ptr<BpfBundleWriter>> bundles_;  // per CPU
  std::vector<RingCtx> ring_ctx_;
  ring_buffer* rb_ = nullptr;
  ScopedFd epoll_fd_;  // Closed after the destructor frees rb_.
  ScopedFd event_fd_;

  // Reader-thread state.
  uint64_t consumed_in_cycle_ = 0;
  bool asking_room_ = false;  // This drain stops when the SMB is full.
  bool out_of_room_ = false;  // It did.
  uint64_t room_credit_ = 0;  // Encoded bytes the writers had room for at the last ask.
  std::vector<uint64_t> last_dropped_;
  uint64_t last_misses_ = 0;
  uint64_t stats_packets_ = 0;
  // Per CPU: the lost records already written as PerfSample packets
  // (user/probes/bpf/bpf_lost_records.h).
  std::vector<uint64_t> lost_records_reported_;

  // Counted by the reader thread (owner), read by stats() from any thread;
  // relaxed, see shm/base/atomic_stats.h. Per CPU: stored after each drain
  // from the CPU's bundle writer. Whole source: drain cycles, reader CPU
  // time, and records of the shared ring that no CPU's writer could take
  // (a hotplugged CPU or a bad cpu field).
  std::unique_ptr<AtomicStats<BpfReaderCpuStats>[]> reader_cpu_stats_;
  AtomicStats<BpfReaderStats> reader_stats_;
  std::atomic<bool> paused_{false};

  // Control channel.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t flush_requested_ = 0;  // guarded by mu_
  uint64_t flush_done_ = 0;       // guarded by mu_
  bool stop_requested_ = false;   // guarded by mu_
  bool started_ = false;
  bool stopped_ = false;
  BpfSourceStats final_counters_;  // guarded by mu_, valid once stopped_
  std::thread reader_;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_BPF_BPF_DATA_SOURCE_H_
