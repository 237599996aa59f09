// FtraceDataSource: the `linux.ftrace` data source. Ties tracefs control
// (FtraceSettings), one reader per CPU, the page encoder
// (FtracePageEncoder) and the TraceWriters together.
//
// Two readers, chosen per CPU by FtraceConfig.ring_buffer_read_mode
// (sluice/ftrace.proto; `sluice record --ftrace-read`):
//   - mapped (FtraceMappedCpuReader, Linux 6.10+): in place, through the
//     CPU's ring buffer mapping;
//   - splice (FtraceCpuReader, every kernel): splice(2), read(2) for the
//     partial page.
//   Either way the CPU's worker thread (FtraceReaderWorker) reads and
//   encodes straight into the CPU's writer; it owns that encoder and writer
//   while it runs, flushes the writer itself and publishes the encoder's
//   stats. AUTO (the default) splices on every kernel: where both paths
//   exist, splice costs less CPU (docs/FTRACE.md, "Which read path");
//   MAPPED maps every CPU and fails Start() if one cannot be mapped,
//   naming the cause; SPLICE never maps. Each CPU's path is in the trace
//   (FtraceCpuStats.sluice_read_path at start and end; `sluice stats`).
//
//   Start()  ─ settings: buffer size, trace_clock=boot, events, tracing_on
//            ─ a reader per online CPU (mapped or splice)
//            ─ FtraceStats{phase: START_OF_TRACE} on the stats writer
//            ─ the readers' worker threads, and the drain thread
//
//   drain thread (reads pages only of a CPU that went offline):
//     every housekeeping period (30 s; options; at rest it doubles up to
//     16 times that, by a session's flush period's rule): re-read the online CPUs,
//       start/stop readers; lower the watermark for a buffer that fills
//       fast (ftrace_watermark.h; a reader's near miss does it at once);
//       publish the counters. (A config's drain_period_ms is kept by each
//       worker itself: ftrace_reader_worker.h. By default there is none
//       where the kernel has a watermark: ftrace_data_source.cc.)
//
//   Flush()  ─ the calling thread reads every CPU's buffer (partial pages
//              too) and flushes the writers, while the workers sleep or
//              wait their turn: no other thread wakes for a flush
//              (ftrace_reader_worker.h, "A flush reads on the thread...")
//   Stop()   ─ disable our events (others' stay), stop the threads, read
//              what is left as a flush does, FtraceStats{phase: END_OF_TRACE},
//              unmap and close, restore tracefs, rmdir the instance if we
//              made it
//   Abandon() ─ the service is gone, nothing more can be delivered: disable
//              our events, stop the threads without a final drain, unmap,
//              restore tracefs, rmdir; returns what was not delivered
//
// Mapped buffers and tracefs. While a CPU's buffer is mapped the kernel
// refuses to resize it (buffer_size_kb, buffer_subbuf_size_kb: EBUSY) and to
// allocate a snapshot (EBUSY). So every reader is destroyed (unmapped,
// closed) before FtraceSettings restores tracefs: in Stop(), Abandon(), a
// Start() that fails half-way, and the destructor.
//
// State file. With options.tracefs_state_dir set, what FtraceSettings changes
// in tracefs (and the instance, before Create() makes it) is saved there
// before it is changed, so that if this process is killed the next
// sluice-probes, `sluice-probes --cleanup` or `sluice record` puts it back
// (user/probes/tracefs_state_file.h, user/probes/tracefs_cleanup.h).
//
// Writers. make_writer() is called once for the stats packets and once per
// CPU (at Start() for the CPUs online then, from the drain thread for CPUs
// that come online later). A CPU's writer and encoder are used under its
// worker's read mutex: by the worker, by Flush(), and by the thread that
// stopped the worker (the drain thread for a CPU going offline,
// Stop()/Abandon() at the end); the stats writer only by the thread calling
// Start()/Flush()/Stop().
//
// Loss accounting, all of it visible in the trace:
//   - kernel overwrote events before we read them: FtraceCpuStats.overrun
//     (END minus START) and lost_events on the bundle of the next page;
//   - kernel refused events (no-overwrite mode): dropped_events;
//   - pages the encoder could not parse: FtraceStats.ftrace_parse_errors and
//     FtraceError entries in the bundles;
//   - user space never drops a page: a worker encodes what it read before
//     it reads more, so the backlog stays in (or overruns) the kernel
//     buffer, where it is counted.
//
// Thread-safety: Start(), Flush() and Stop() are called from one thread (the
// producer's); stats() from any.
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_DATA_SOURCE_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_DATA_SOURCE_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "perfetto/config/ftrace/ftrace_config.pb.h"
#include "sluice/ftrace.pb.h"
#include "shm/base/atomic_stats.h"
#include "shm/base/scoped_fd.h"
#include "shm/base/status.h"
#include "shm/trace_writer.h"
#include "user/probes/ftrace/ftrace_buffer_choice.h"
#include "user/probes/ftrace/ftrace_settings.h"
#include "user/probes/ftrace/ftrace_cpu_reader.h"
#include "user/probes/ftrace/ftrace_format.h"
#include "user/probes/ftrace/ftrace_mapped_cpu_reader.h"
#include "user/probes/ftrace/ftrace_page_encoder.h"
#include "user/probes/tracefs.h"
#include "user/probes/tracefs_state_file.h"

namespace sluice {

struct FtraceDataSourceOptions {
  // tracefs mount point; empty = find it (/sys/kernel/tracing, debugfs).
  std::string tracefs_root;
  bool allow_mount = true;
  std::string cpu_online_path = "/sys/devices/system/cpu/online";
  // Android detection and the atrace runner (tests substitute them).
  FtraceSettingsOptions control;
  // Tests: start with the readers paused (nothing is read from the kernel
  // until SetReadingPausedForTesting(false) or Stop()).
  bool start_reading_paused = false;
  // Where to keep the tracefs state file (see above); empty = none.
  std::string tracefs_state_dir;
  // How often the drain thread looks for CPUs gone or come online, at the
  // buffers' fill rate, and publishes the counters (stats() has them
  // published too). Not the drain period: each worker keeps that itself. 30 s, so
  // that a recorder at rest is not woken every second for it (a fast-filling
  // buffer is seen at once all the same: its reader's near miss wakes this
  // thread). The price: a CPU that comes online is read up to a period
  // late, and what its buffer cannot hold until then is overwritten and
  // counted (overrun), as any backlog is. Tests lengthen it to leave a
  // reader's near miss as the only way the watermark is lowered. At rest
  // (below 64 KiB/s read) it doubles at each look, up to 16 times this (8
  // min), and returns to it when more is read or a CPU comes or goes: a
  // CPU that comes online at rest may wait that long, with the trickle of
  // a machine at rest to hold in its buffer meanwhile.
  std::chrono::milliseconds housekeeping_period{30 * 1000};
  // With no instance configured, another process reading the top-level
  // buffer moves the session to an instance of its own or refuses it
  // (ftrace_buffer_choice.h). Tests that stand in for that other tracer in
  // this process turn it off for the stand-in.
  bool avoid_other_tracers = true;
};

// What Abandon() could not deliver.
struct FtraceAbandonStats {
  uint64_t kernel_unread_events = 0;  // Left in the kernel buffer (per_cpu/cpuN/stats entries).
};

// Totals so far, for `sluice record`'s status line. Published by the drain
// thread when stats() asks and every housekeeping period (relaxed; a
// snapshot, not a consistent cut).
struct FtraceSourceStats {
  uint64_t events = 0;             // Events written into the trace.
  uint64_t pages = 0;              // Pages read from the kernel.
  uint64_t bytes = 0;              // Bytes read from the kernel.
  uint64_t bundles = 0;            // FtraceEventBundle packets written.
  uint64_t lost_event_pages = 0;   // Pages the kernel flagged as after a loss.
  uint64_t lost_events_known = 0;  // Events the kernel said it lost (stored counts).
  // Flagged pages whose count the kernel could not store (the page was too
  // full): lost_events_known is then a lower bound.
  uint64_t lost_event_pages_uncounted = 0;
  uint64_t parse_errors = 0;       // Malformed pages skipped.
  uint64_t unknown_event_ids = 0;  // Records of events we have no format for.
  uint64_t read_errors = 0;        // splice/read errors; GET_READER failures.
  uint64_t mapped_cpus = 0;        // CPUs read through the mapping now.
  uint64_t splice_cpus = 0;        // CPUs read with splice now.
  // Times a reader stopped taking pages for a full SMB, and how long
  // (FtraceReaderWorker: "A full SMB"); the kernel's overrun counts the loss.
  uint64_t smb_full_waits = 0;
  uint64_t smb_full_wait_ms = 0;
};

// The options of `config` sluice's recorder does not carry out, each a
// warning naming the option and what the trace has instead (a Perfetto
// config that asks for them records, without what they would add).
std::vector<std::string> FtraceOptionsNotApplied(const perfetto::protos::FtraceConfig& config);

// The kernel buffer per CPU, in KiB, that `config` gets: its buffer_size_kb,
// or, when it names none (or a smaller one with buffer_size_lower_bound),
// upstream traced_probes' default: 8 MiB on a machine with 7 GiB of memory
// or more, else 2 MiB. A Perfetto config written for traced (the `perfetto`
// command's, through sluiced) records with the buffer it would have there,
// not with whatever size the kernel buffer was left at (upstream leaves it
// at 7 KiB). `sluice record` always names one (-k).
uint32_t KernelBufferKbFor(const perfetto::protos::FtraceConfig& config, uint64_t physical_memory_bytes);

class FtraceDataSource {
 public:
  // Finds tracefs (creating the configured instance) and checks the config;
  // changes nothing else yet.
  static StatusOr<std::unique_ptr<FtraceDataSource>> Create(
      const perfetto::protos::FtraceConfig& config,
      std::function<std::unique_ptr<TraceWriter>()> make_writer,
      const FtraceDataSourceOptions& options);
  ~FtraceDataSource();  // Stop()s if running; removes an instance it made.
  FtraceDataSource(const FtraceDataSource&) = delete;
  FtraceDataSource& operator=(const FtraceDataSource&) = delete;

  // Enables events, writes FtraceStats(START), starts the workers and the
  // drain thread. On error nothing stays changed.
  Status Start();
  // Drains everything available now, writes it, flushes every writer.
  // Synchronous.
  void Flush();
  // A trace file is cut here (ClearIncrementalState at a rotation: `sluice
  // record --rotate`): the kernel's counters now, as an END_OF_TRACE
  // FtraceStats, the phase upstream's trace_processor reads; the service
  // closes the file before the cut with them and opens the next with them as
  // its START_OF_TRACE (tracing_service_session.cc), so each file says what
  // the kernel lost in its own time. Task thread, as Flush.
  void WriteStatsForCut();
  // Disables our events, final drain, FtraceStats(END), restores tracefs.
  void Stop();
  // For when the service is gone: disables our events, stops the threads
  // without draining (the writers could not deliver anything), restores
  // tracefs and removes the instance. Afterwards Stop() does nothing.
  FtraceAbandonStats Abandon();

  FtraceSourceStats stats() const;
  // Tests: pause/resume reading from the kernel (the kernel buffer then
  // absorbs, or overruns).
  void SetReadingPausedForTesting(bool paused);

  // --- For tests and `sluice doctor` (valid after Start()). ---
  const FtraceSettings* settings() const { return settings_.get(); }
  const Tracefs& tracefs() const { return *tracefs_; }
  uint32_t page_size() const { return page_size_; }
  // The drain deadline the readers keep (FtraceConfig.drain_period_ms, or
  // the default for this kernel).
  uint32_t drain_period_ms() const { return drain_period_ms_; }
  // Problems that did not stop the trace (restore errors, reader errors).
  std::vector<std::string> warnings() const;
  // CPUs that have a running reader now (hotplug tests).
  std::vector<uint32_t> ReadingCpusForTesting() const;

 private:
  static StatusOr<FtraceBufferChoice> ChooseBuffer(const perfetto::protos::FtraceConfig& config,
                                                   const FtraceDataSourceOptions& options);
  // FtraceCpuStats.sluice_read_path: a bit per way a CPU was read.
  static constexpr uint32_t kReadMapped = sluice::protos::FTRACE_READ_PATH_MAPPED;
  static constexpr uint32_t kReadSplice = sluice::protos::FTRACE_READ_PATH_SPLICE;
  static_assert((kReadMapped | kReadSplice) == sluice::protos::FTRACE_READ_PATH_MAPPED_AND_SPLICE);

  struct CpuState {
    uint32_t cpu = 0;
    // Declared before the readers: a mapped worker uses them until its
    // reader is destroyed.
    std::unique_ptr<TraceWriter> writer;
    std::unique_ptr<FtracePageEncoder> encoder;
    // At most one of the two; both null while the CPU is offline.
    std::unique_ptr<FtraceCpuReader> reader;          // splice
    std::unique_ptr<FtraceMappedCpuReader> mapped;    // in place
    FtraceCpuReaderStats retired_reader_stats;        // Of readers already stopped.
    FtraceMappedCpuReaderStats retired_mapped_stats;
    uint32_t read_paths = 0;                          // kReadMapped | kReadSplice used.
    FtraceReaderWakeStats retired_wake_stats;         // Of readers already stopped.
    uint64_t bytes_at_last_tick = 0;                  // AdaptWatermark(): drain thread only.

    // Bytes every reader this CPU had took from the kernel.
    uint64_t BytesRead() const {
      uint64_t bytes = retired_reader_stats.bytes + retired_mapped_stats.bytes;
      if (reader) bytes += reader->stats().bytes;
      if (mapped) bytes += mapped->stats().bytes;
      return bytes;
    }

    // The running reader (either kind), or null.
    FtraceReaderWorker* worker() const {
      if (mapped) return mapped.get();
      return reader.get();
    }
    // Of every reader this CPU had.
    FtraceReaderWakeStats WakeStats() const {
      FtraceReaderWakeStats w = retired_wake_stats;
      if (worker()) {
        const FtraceReaderWakeStats now = worker()->wake_stats();
        AccumulateStats(&w, now);
        w.most_pages_per_wake = std::max(retired_wake_stats.most_pages_per_wake, now.most_pages_per_wake);
      }
      return w;
    }
  };

  FtraceDataSource(const perfetto::protos::FtraceConfig& config,
                   std::function<std::unique_ptr<TraceWriter>()> make_writer,
                   const FtraceDataSourceOptions& options);

  // Drain thread or Start(): a reader for `cpu` as the read mode says,
  // with its worker running if `start_thread`.
  Status StartReader(uint32_t cpu, bool start_thread);
  // The mapped reader for `state`, or why there is none.
  StatusOr<std::unique_ptr<FtraceMappedCpuReader>> MapReader(CpuState* state);
  void StopReader(CpuState* state);  // Drain thread: join, then read the rest.
  // Keeps the stopped reader's stats and destroys it (closing its fds).
  void RetireReader(CpuState* state);
  void DrainThreadMain();
  void DrainLoop();  // DrainThreadMain's body.
  // Starts and stops readers as CPUs came and went; true if any did.
  bool HandleHotplug();
  // Bytes every CPU's readers took from the kernel (drain thread).
  uint64_t BytesReadByAll() const;
  void PublishCounters();
  // Drain thread, each housekeeping tick: lowers the watermark once a CPU's
  // buffer fills fast at the last second's rate (ftrace_watermark.h).
  void AdaptWatermark(std::chrono::steady_clock::time_point now);
  // Drain thread: whether a reader found its buffer kNearMissPercent full
  // while sluice may still lower the watermark.
  bool AnyNearMiss() const;
  // Drain thread: sets the lower watermark, for the rest of the trace.
  void LowerWatermark();
  // Before a worker starts: it notifies signal_ at its first near miss.
  void WatchForNearMiss(FtraceReaderWorker* worker) const;
  // `with_parse_errors`: the encoders' parse errors too (only once the
  // readers are gone: the encoders are theirs while they run).
  void WriteStats(int phase, bool with_parse_errors = true);
  // rmdir's the instance if Create() made it, and tells FtraceSettings.
  void RemoveInstanceIfCreated();
  // Printed (unless options.control.print_warnings is off) and kept.
  void AddWarning(const std::string& warning);
  // Has the drain thread exit, and joins it.
  void StopDrainThread();
  // Destroys every CPU's state (unmapping and closing its reader) when
  // Start() fails half-way.
  void DestroyReaders();

  perfetto::protos::FtraceConfig config_;
  std::function<std::unique_ptr<TraceWriter>()> make_writer_;
  FtraceDataSourceOptions options_;
  uint32_t drain_period_ms_ = 100;
  sluice::protos::FtraceReadMode read_mode_ = sluice::protos::FTRACE_READ_MODE_AUTO;

  std::unique_ptr<TracefsStateFile> state_file_;  // Before tracefs_: it outlives FtraceSettings.
  std::unique_ptr<Tracefs> tracefs_;
  std::unique_ptr<FtraceSettings> settings_;
  FtraceFormatTable formats_;
  uint32_t page_size_ = 0;
  uint32_t buffer_pages_per_cpu_ = 0;
  // Whether sluice may lower the watermark (the config left it to sluice
  // and the kernel has one) and whether it did. Set in Create(), then
  // drain thread only (and Start() before that thread runs).
  bool may_adapt_watermark_ = false;
  bool watermark_lowered_ = false;
  std::chrono::steady_clock::time_point last_watermark_tick_;
  FtraceEncodeOptions encode_options_;
  std::unique_ptr<TraceWriter> stats_writer_;
  std::vector<std::string> format_missing_;
  std::vector<uint32_t> stats_cpus_;  // CPUs with per_cpu/cpuN at Start().

  // Index = CPU number. Once the drain thread runs, only it changes cpus_
  // (slots and readers), holding readers_mutex_ and flush_mutex_; it reads
  // without them. Flush() reads under flush_mutex_ (for all of a flush: no
  // reader starts or stops during one); SetReadingPausedForTesting under
  // readers_mutex_.
  mutable std::mutex readers_mutex_;
  std::mutex flush_mutex_;
  std::vector<std::unique_ptr<CpuState>> cpus_;
  mutable DrainSignal signal_;  // Notify() only from const stats().
  std::thread drain_thread_;
  // The online CPU list, kept open for HandleHotplug() (drain thread only;
  // the destructor closes it).
  ScopedFd cpu_online_fd_;
  bool started_ = false;
  bool stopped_ = false;
  std::atomic<bool> paused_{false};

  // Publish requests (stats() -> drain thread) and its exit: under
  // api_mutex_; the drain thread is woken through signal_, and runs while
  // drain_running_.
  mutable std::mutex api_mutex_;
  mutable std::condition_variable api_cv_;
  mutable uint64_t publish_requested_ = 0;
  uint64_t publish_done_ = 0;
  bool drain_running_ = false;
  bool drain_exit_requested_ = false;
  // Abandon(): the drain thread stops at its next check, without a flush.
  std::atomic<bool> abandoned_{false};

  FtraceBufferChoice buffer_choice_;  // Set by Create().
  mutable std::mutex warnings_mutex_;
  std::vector<std::string> warnings_;

  // Published by the drain thread; read by stats().
  AtomicStats<FtraceSourceStats> stats_;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_DATA_SOURCE_H_
