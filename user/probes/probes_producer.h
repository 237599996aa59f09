// ProbesProducer: the producer that hosts sluice's kernel data sources.
//
//   linux.ftrace         FtraceDataSource (user/probes/ftrace/ftrace_data_source.h)
//   linux.bpf            BpfDataSource (user/probes/bpf/bpf_data_source.h)
//   linux.process_stats  ProcessStatsDataSource
//   linux.system_info    WriteSystemInfoPacket
//
// It is the same object in `sluice-probes` (connected to sluiced through the
// producer socket) and in `sluice record` (connected to an in-process
// TracingService). It implements Producer: the service tells it to
// start, flush and stop data source instances; each instance writes through
// TraceWriters from the SharedMemoryArbiter over this connection's SMB.
//
// Threads: every Producer call is queued to the producer's own task
// thread and answered from there, so the caller (the service loop or the IPC
// client's thread) never waits for a data source to start or drain. The data
// sources run their own reader threads; their Flush()/Stop() are synchronous.
//
// Faults, and what they cost:
//   - This process is killed: the tracefs state files it kept
//     (ProbesProducerOptions.tracefs_state_dir) let the next ProbesProducer
//     put tracefs back: Connect() first restores what dead owners left
//     (user/probes/tracefs_cleanup.h), before any data source registers.
//     sluiced keeps what was committed (it scrapes the SMB on disconnect);
//     what was still in the kernel buffer or a chunk being
//     written is lost, and the cleanup's line says how many events the
//     kernel buffer held.
//   - The service goes away (OnDisconnect: sluiced died or dropped us): the
//     arbiter is told at once, so no writer waits for chunks, and a task put
//     at the front of the queue abandons every instance: ftrace sources put
//     tracefs back first (FtraceDataSource::Abandon), then BPF and the rest
//     stop. One line reports how long after noticing tracefs was restored
//     and what could not be delivered. Start requests still queued are
//     dropped.
#ifndef SLUICE_USER_PROBES_PROBES_PRODUCER_H_
#define SLUICE_USER_PROBES_PROBES_PRODUCER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "service/service_endpoints.h"
#include "shm/shared_memory_arbiter.h"
#include "user/probes/bpf/bpf_data_source.h"
#include "user/probes/ftrace/ftrace_data_source.h"
#include "user/probes/process_stats/process_stats_data_source.h"
#include "user/probes/tracefs_state_file.h"

namespace sluice {

struct ProbesProducerOptions {
  FtraceDataSourceOptions ftrace;
  // Where the ftrace sources keep their tracefs state files, and where
  // Connect() looks for those of dead owners; empty = nowhere.
  std::string tracefs_state_dir = kDefaultTracefsStateDir;
  // Connect() first restores what dead owners left there. sluice-probes turns
  // it off when it has just done so itself.
  bool restore_tracefs_on_connect = true;
  BpfDataSourceOptions bpf;
  BufferExhaustedPolicy buffer_exhausted_policy = BufferExhaustedPolicy::kStall;
  // Reports problems that did not stop a data source (one line each).
  std::function<void(const std::string&)> warn;
  // Called on the task thread after each data source started or failed to
  // start: `sluice record` then looks whether to say "recording", rather
  // than asking every 100 ms while a START_TRACING trigger keeps it waiting.
  std::function<void()> on_data_source_started;
};

// The SMB the probes ask the service for (--smb of sluice-probes and of
// sluice record): 8 MiB by default, at most 1 GiB so that its size in bytes
// fits ProducerOptions' uint32 (the service clamps it to its --max-shm-size
// anyway).
inline constexpr uint32_t kDefaultProbesSmbKb = 8 * 1024;
inline constexpr uint32_t kMaxProbesSmbKb = 1u << 20;

// --smb's value: a SIZE (shm/base/units.h), at most kMaxProbesSmbKb.
StatusOr<uint32_t> ParseProbesSmbKb(std::string_view text);

// How the probes connect, in sluice-probes and in sluice record: producer
// name "sluice-probes", an SMB of `smb_kb` (<= kMaxProbesSmbKb), 32 KiB pages.
ProducerOptions ProbesConnectionOptions(uint32_t smb_kb);

// What the status line shows, summed over running instances.
struct ProbesStats {
  uint64_t ftrace_events = 0;
  uint64_t ftrace_lost_event_pages = 0;
  uint64_t ftrace_parse_errors = 0;
  // Times an ftrace reader stopped taking pages because the SMB was full.
  uint64_t ftrace_smb_full_waits = 0;
  uint64_t bpf_events = 0;
  uint64_t bpf_dropped = 0;
  // Times the BPF reader stopped reading its rings because the SMB was full.
  uint64_t bpf_smb_full_waits = 0;
  uint64_t writer_packets_lost = 0;
};

class ProbesProducer : public Producer {
 public:
  explicit ProbesProducer(ProbesProducerOptions options);
  ~ProbesProducer() override;

  // Takes the connection (from TracingService::ConnectProducer or the IPC
  // client), restores tracefs left by dead owners (each line through
  // options.warn), builds the arbiter over its SMB and registers the data
  // sources. `connection` must outlive this object's Disconnect().
  void Connect(ProducerEndpoint* connection);
  // Stops every instance, destroys the writers and the arbiter. Call before
  // destroying the connection.
  void Disconnect();

  ProbesStats stats() const;
  // Errors that made a data source instance fail to start (one line each).
  std::vector<std::string> start_errors() const;
  // Number of instances that are running.
  size_t running_instances() const;

  // Producer.
  void SetupDataSource(DataSourceInstanceId id,
                       const perfetto::protos::DataSourceConfig& config) override;
  void StartDataSource(DataSourceInstanceId id,
                       const perfetto::protos::DataSourceConfig& config) override;
  void StopDataSource(DataSourceInstanceId id) override;
  void Flush(FlushRequestId id, const std::vector<DataSourceInstanceId>& instances) override;
  void ClearIncrementalState(const std::vector<DataSourceInstanceId>& instances) override;
  void OnDisconnect(const std::string& reason) override;

  static const std::vector<std::string>& DataSourceNames();

 private:
  struct Instance {
    std::string name;
    std::unique_ptr<FtraceDataSource> ftrace;
    std::unique_ptr<BpfDataSource> bpf;
    std::unique_ptr<ProcessStatsDataSource> process_stats;
    // linux.system_info: written at start and again at ClearIncrementalState.
    std::unique_ptr<TraceWriter> system_info;
    bool system_info_irq_names = false;
  };

  void Post(std::function<void()> task);
  // Runs before everything already queued.
  void PostFirst(std::function<void()> task);
  // The service is gone: abandons every instance (see the header comment).
  void AbandonOnTaskThread(const std::string& reason,
                           std::chrono::steady_clock::time_point noticed);
  void RunTasks();
  void StartOnTaskThread(DataSourceInstanceId id, const perfetto::protos::DataSourceConfig& config);
  void StopOnTaskThread(DataSourceInstanceId id);
  void Warn(const std::string& message);
  static void AddCounters(const Instance& inst, ProbesStats* c);

  ProbesProducerOptions options_;
  ProducerEndpoint* connection_ = nullptr;
  // Set in Connect(), reset in Disconnect(); arbiter_mutex_ also lets
  // OnDisconnect (the IPC receive thread) reach it.
  std::mutex arbiter_mutex_;
  std::unique_ptr<SharedMemoryArbiter> arbiter_;
  // OnDisconnect happened: no new instance starts.
  std::atomic<bool> service_gone_{false};

  // Instances: touched only on the task thread, except stats() which
  // takes instances_mutex_.
  mutable std::mutex instances_mutex_;
  std::map<DataSourceInstanceId, Instance> instances_;
  std::vector<std::string> start_errors_;
  // Totals of instances already stopped, so the final summary has them.
  ProbesStats retired_counters_;
  std::atomic<uint64_t> writer_packets_lost_{0};

  std::mutex tasks_mutex_;
  std::condition_variable tasks_cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread task_thread_;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_PROBES_PRODUCER_H_
