// TracingService: the core of sluiced, also embedded in `sluice record`.
//
// It owns the producers' shared memory buffers (SMBs), the central buffers
// (TraceBuffer, one per TraceConfig.buffers entry) and the tracing sessions,
// and moves data between them:
//
//   producer ──CommitData(chunks, patches)──▶ SMB chunk ──copy──▶ TraceBuffer
//   consumer ──EnableTracing(TraceConfig)──▶ session: buffers + data source
//            ──ReadBuffers / write_into_file◀── packets, stamped with trusted
//                                                uid/pid/sequence id
//
// The same object serves in-process callers (ConnectProducer/ConnectConsumer
// return objects implementing service_endpoints.h) and the sockets (IpcServer
// in service/ipc/ipc_server.h adapts the sockets to the same calls). docs/SERVICE.md
// has the session life cycle and the accounting; docs/IPC.md the wire side.
//
// Threads (the model; docs/SERVICE.md "Threads" has the picture):
//  - One *service thread* runs the EventLoop given at construction: socket
//    I/O, timers (duration, periodic flush, file writes, flush/stop
//    timeouts) and every call the service makes *out* (Producer
//    methods, consumer notifications, flush completions). Calls out are
//    queued as tasks and run without any service lock held, so a producer
//    may call back into the service from its callback.
//  - Calls *in* (CommitData from an in-process arbiter on any producer
//    thread, consumer calls from the recorder's thread, IPC dispatch on the
//    service thread) take `mu_`, one mutex guarding all state (ServiceLock).
//    The commit path holds it for one chunk copy per chunk; nothing under
//    mu_ blocks on I/O or calls out.
//  - CommitData never waits for mu_, nor does the writer registration an
//    arbiter sends with a writer's first commit (SetWriterBuffer): if
//    another thread holds it, the call is queued (deferred_commits_) and the
//    holder applies it before it
//    unlocks, or the next thread to lock does, before anything else. The
//    commit thread is an ftrace reader that must keep up with the kernel,
//    and a holder (the file writer reading a slice, another reader's copy)
//    can stall for seconds on a saturated machine, preempted or asleep in
//    the kernel: the reader waited that long and the kernel buffer overran (docs/PERFORMANCE.md, "The
//    service lock"). Queued commits keep their chunks in the SMB until
//    applied, so the SMB, not the kernel buffer, rides out such a stall.
//  - Trace-file writes happen on the service thread without mu_ held
//    (packets are collected under mu_ first).
//  - Lifetimes: every queued task checks a shared Lifetime token under its
//    mutex, so tasks queued after ~TracingService do nothing; a connection
//    destroyed off the service thread waits for a call out that is running
//    into it (the same mutex) before it returns. Connections must be
//    destroyed before the service; an in-process producer destroys its
//    SharedMemoryArbiter (and TraceWriters) before its connection.
//
// Untrusted input: everything a producer sends or writes in its SMB. Faults
// are counted (per buffer abi_violations, TraceStats.chunks_discarded /
// patches_discarded, ServiceStats) and a producer that keeps faulting is
// disconnected (TracingServiceOptions::abi_violations_before_disconnect).
// Nothing a producer does can crash or block the service or reach another
// producer's data: a producer writes only into buffers of sessions it has a
// data source in, and its packets carry its own uid/pid/sequence ids.
#ifndef SLUICE_SERVICE_TRACING_SERVICE_H_
#define SLUICE_SERVICE_TRACING_SERVICE_H_

#include <sys/types.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "perfetto/config/trace_config.pb.h"
#include "service/event_loop.h"
#include "service/ipc/ipc_socket.h"
#include "service/producer_host.h"
#include "service/service_endpoints.h"
#include "service/trace_buffer.h"
#include "shm/shared_memory.h"
#include "shm/smb_chunk_reader.h"
#include "sluice/service_stats.pb.h"
#include "shm/shm_abi.h"
#include "shm/base/status.h"

namespace perfetto::protos {
class RemoteClockSync;
class TraceStats;
}  // namespace perfetto::protos

namespace sluice {

class TraceFileWriter;
class TraceFileRotation;

using ConsumerId = uint64_t;
using TracingSessionId = uint64_t;
// Service-wide id of a central buffer; what producers receive as
// DataSourceConfig.target_buffer and echo in ChunkToMove.target_buffer.
// Starts at 1, never reused within one service instance.
using BufferId = uint32_t;

struct TracingServiceOptions {
  // SMB sizing (bytes). A producer's hint is clamped to [min, max] and
  // rounded up to a multiple of the page size; 0 means default.
  uint32_t default_shm_size_bytes = 256 * 1024;
  uint32_t min_shm_size_bytes = 64 * 1024;
  uint32_t max_shm_size_bytes = 32 * 1024 * 1024;
  uint32_t default_shm_page_size_bytes = 4096;
  // Producers whose uid is not listed are refused (IPC only; the in-process
  // producer is the service's own process). Empty: any uid.
  std::vector<uid_t> producer_uid_allowlist;
  // Consumers (record, stop, read traces: through sluice-probes that starts
  // kernel tracing) whose uid is not in the first list and whose primary or
  // supplementary groups are not in the second are refused: each request
  // they send is answered with the reason (IPC only). Both empty: anyone
  // who can open the socket. Root is not implied: list 0 to let it in.
  std::vector<uid_t> consumer_uid_allowlist;
  std::vector<gid_t> consumer_gid_allowlist;
  uint32_t max_producers = 256;
  uint32_t max_data_sources_per_producer = 64;
  // Sum of all sessions' buffers.
  uint64_t max_total_buffer_bytes = 2ull << 30;
  uint32_t max_buffers_per_session = 64;
  // A producer with this many ABI/protocol violations is disconnected.
  uint32_t abi_violations_before_disconnect = 64;
  // A commit that comes this long after its producer's last one has its
  // chunks read by pread(2) of the SMB's memfd, not out of the service's
  // mapping (ReadChunkUntrusted: at rest that mapping's pages have been
  // idle that long, and may fault again in the host when touched; warm,
  // pread costs more). A producer's first commit counts as one after idle.
  uint32_t cold_commit_after_ms = 30000;
  // One line per event worth logging (producer connect/disconnect, refused
  // producers, dropped connections). Default: silent.
  std::function<void(const std::string&)> log;
};

// Service-wide counters beyond TraceStats (which is per session).
struct ServiceStats {
  uint64_t producers_connected = 0;
  uint64_t producers_seen = 0;
  uint64_t producers_refused = 0;              // uid allowlist, limits
  uint64_t producers_disconnected_for_faults = 0;
  // Dropped because they did not read their socket (IPC only): a flush
  // timed out before the producer read the Flush request, or the output
  // queued for it passed IpcServerOptions::producer_max_queued_output.
  uint64_t producers_disconnected_not_reading = 0;
  uint64_t consumers_connected = 0;
  uint64_t abi_violations = 0;                 // All producers, all kinds.
  uint64_t ipc_connections_dropped = 0;        // Oversize/malformed frames.
  uint64_t chunks_discarded = 0;               // Bad target buffer / bad chunk.
  uint64_t patches_discarded = 0;
  uint64_t chunks_not_complete = 0;            // Commit of a non-Complete chunk.
  uint64_t chunks_after_session_end = 0;       // Late commits, dropped.
  uint64_t chunks_scraped = 0;                 // Recovered from SMBs.
  // BeingWritten chunks in the SMB of a producer that went away or whose
  // session ended: never committed, lost (per session: TraceStats'
  // sluice_service_stats.chunks_lost_being_written).
  uint64_t chunks_lost_being_written = 0;
  // Complete chunks of writers the producer had not registered yet, left in
  // the SMB of a producer that went away or whose session ended: the
  // service cannot tell their buffer (per session:
  // sluice_service_stats.chunks_lost_writer_unknown).
  uint64_t chunks_lost_writer_unknown = 0;
  uint64_t chunks_moved = 0;
  uint64_t bytes_moved = 0;
  // Chunks copied out of an SMB by pread(2): commits after an idle spell
  // (TracingServiceOptions::cold_commit_after_ms).
  uint64_t chunks_read_by_pread = 0;
  // CommitData calls that found mu_ taken and were applied by the thread
  // that held it (TracingService::CommitData): how often a producer thread
  // would have waited for the service.
  uint64_t commits_deferred = 0;
};

// Notified by the service (on the service thread, no lock held).
class Consumer {
 public:
  virtual ~Consumer() = default;
  // The session stopped; `error` is empty on a normal stop.
  virtual void OnTracingDisabled(const std::string& error) = 0;
  // A CLONE_SNAPSHOT trigger of the session fired (after its stop_delay_ms).
  virtual void OnCloneTriggerHit(const std::string& trigger_name) { (void)trigger_name; }
  // Every data source instance of the session has started (acked its start
  // where its producer said it would, will_notify_on_start). Once per
  // session, from its start (`perfetto --background-wait` waits for it).
  virtual void OnAllDataSourcesStarted() {}
  // A rotating session finished one of its files (SessionOptions.rotation):
  // `name` is its final name in the session's directory.
  virtual void OnTraceFileFinished(const std::string& name) { (void)name; }
};

class TracingService : public ProducerHost {
 public:
  // `loop` runs the service thread and outlives the service.
  explicit TracingService(EventLoop* loop, TracingServiceOptions options = {});
  ~TracingService() override;
  TracingService(const TracingService&) = delete;
  TracingService& operator=(const TracingService&) = delete;

  // ---- In-process API (`sluice record`). ----

  // Creates the producer's SMB (memfd) and returns the producer's handle.
  // `endpoint` outlives the returned connection. Uid/pid: this process.
  StatusOr<std::unique_ptr<ProducerEndpoint>> ConnectProducer(Producer* endpoint,
                                                                const ProducerOptions& options);
  // A consumer whose methods block until the service answered. Must not be
  // used on the service thread.
  std::unique_ptr<ConsumerEndpoint> ConnectConsumer();

  // ---- For the IPC layer (also usable in-process). ----

  // As above, with the peer's credentials (SO_PEERCRED). Refused when the
  // uid is not in the allowlist or there are too many producers. The
  // connection's shm_fd is what goes to the producer with SCM_RIGHTS.
  StatusOr<std::unique_ptr<ProducerEndpoint>> ConnectProducer(Producer* endpoint,
                                                                const ProducerOptions& options,
                                                                const PeerCredentials& peer,
                                                                int* shm_fd) override;

  // Non-blocking consumer API. `observer` outlives RemoveConsumer(). Replies
  // that need the service thread (Flush) arrive through callbacks run on the
  // service thread without locks held.
  ConsumerId AddConsumer(Consumer* observer, const PeerCredentials& peer);
  // Whether the consumer allowlists let `peer` in; the error names its uid
  // and the sluiced options. Logs one line on a refusal.
  Status CheckConsumerAllowed(const PeerCredentials& peer);
  // The consumer went away. A session it had (not detached) is ended as
  // DisableTracing ends it and freed once its file, if the service writes
  // one, is complete; a session it cloned is freed at once.
  void RemoveConsumer(ConsumerId consumer);
  // `output_fd`: see ConsumerEndpoint::EnableTracing.
  Status EnableTracing(ConsumerId consumer, const perfetto::protos::TraceConfig& config,
                       ScopedFd output_fd, const SessionOptions& options = {});
  Status StartTracing(ConsumerId consumer);
  void Flush(ConsumerId consumer, uint32_t timeout_ms, std::function<void(bool success)> done);
  Status DisableTracing(ConsumerId consumer);
  // Appends readable packets (stamped, without the Trace record header) to
  // *packets, about `max_bytes` of them; *more says that more may follow:
  // call again (the service mutex is released in between, so commits go on).
  // Not for write_into_file sessions.
  //
  // A slice is small because producers wait on the service mutex while it
  // is read: an in-process producer (`sluice record`) commits under it from
  // its ftrace readers. A 4 MiB slice held it ~50 ms, and 0.7-4.8 s when the
  // reading thread was preempted on a machine the workload saturated (700 ms
  // wall for 22 ms of CPU, 6 involuntary switches), long enough for 1 MiB
  // kernel buffers to overrun (docs/PERFORMANCE.md, "The service lock").
  static constexpr size_t kReadSliceBytes = 256u << 10;
  Status ReadBuffers(ConsumerId consumer, std::vector<std::string>* packets, bool* more,
                     size_t max_bytes = kReadSliceBytes);
  StatusOr<perfetto::protos::TraceStats> GetTraceStats(ConsumerId consumer);
  Status FreeBuffers(ConsumerId consumer);

  // Session control (ConsumerEndpoint has the contract; the code is in
  // tracing_service_control.cc). The consumer's peer uid is the caller's.
  Status Detach(ConsumerId consumer, const std::string& key);
  StatusOr<AttachedSession> Attach(ConsumerId consumer, const std::string& key);
  SessionList ListSessions(ConsumerId consumer);
  // Answers through `done` (on the service thread, no lock held) once the
  // flush ended and the copy was made, or at once with the refusal.
  void CloneSession(ConsumerId consumer, const std::string& key,
                    std::function<void(StatusOr<CloneResult>)> done);

  // Fires `names` for producer `producer` (tracing_service_triggers.cc):
  // each session whose trigger_config names one acts on it. Answered with
  // Producer::OnTriggersActivated (the number of sessions that acted).
  void ActivateTriggers(ProducerId producer, const std::vector<std::string>& names);

  // Shutdown: stops every session as DisableTracing would (final flush,
  // stop, trailer, file closed); AllSessionsDisabled() tells when done.
  void DisableAllSessions();
  bool AllSessionsDisabled();

  // ---- Relayed machines (service/relay/relay_server.h; service thread). ----
  // A relay connected for the machine named `name`: its machine_id, the
  // same each time the name comes back (1 up; 0 is this machine). Counted
  // as a connect in every live session.
  uint32_t AddRelayedMachine(const std::string& name);
  // Its link ended; `chunks_lost_in_transit`: frames cut off with it (each
  // counted as one chunk, its real number unknown here).
  void RelayedMachineGone(uint32_t machine_id, uint64_t chunks_lost_in_transit);
  // The machine's relay came back and counted a cut frame's chunks itself
  // (RelayLosses.includes_cut_frame): the one RelayedMachineGone counted
  // for it is taken back, in the sessions that got it.
  void UncountCutFrame(uint32_t machine_id);
  // A clock sync measured for the machine: written (stamped with its
  // machine_id) into every live session's trace before any more of the
  // machine's data, and at the head of each later file. `offset_ns`: its
  // boot clock minus ours; `error_ns`: the bound on that offset's error.
  void SetMachineClockSync(uint32_t machine_id, const perfetto::protos::RemoteClockSync& sync,
                           int64_t offset_ns, uint64_t error_ns);
  // Chunks the machine's relay dropped for `buffer` (the host BufferId it
  // named): counted in the buffer's session.
  void AddMachineLosses(uint32_t machine_id, BufferId buffer, uint64_t chunks, uint64_t packets,
                        uint64_t bytes);

  ServiceState QueryServiceState();
  ServiceStats GetServiceStats();
  // How many times the service did work that leaves freed heap worth giving
  // back: a producer gone, a consumer gone, a session freed, a read of a
  // session's buffers. sluiced checks its heap a second after this changes
  // (TrimFreeHeap in sluiced_main.cc), not after every commit: at rest each
  // wake-up of an idle daemon costs up to a millisecond on a machine that
  // shadows page tables (docs/PERFORMANCE.md, "Sluice at rest"). Any thread.
  uint64_t heap_release_events() const { return heap_release_events_.load(std::memory_order_relaxed); }
  // Tests: runs `fn` holding the service mutex (as a preempted holder would).
  void RunWithServiceLockForTesting(const std::function<void()>& fn);
  // The longest lap of any buffer (TraceBuffer::lap_size()).
  size_t LongestLapForTesting();
  // Called by the IPC layer when it drops a connection for a bad frame.
  void CountDroppedIpcConnection() override;
  // Called by the IPC layer when it drops the producer whose endpoint is
  // `endpoint` because it does not read its socket (it closes the
  // connection itself afterwards). Counted service-wide and in the sessions
  // the producer takes part in; logged with `why`.
  void CountProducerNotReading(Producer* endpoint, const std::string& why) override;
  EventLoop* loop() const override { return loop_; }
  void LogLine(const std::string& line) const override { Log(line); }
  const TracingServiceOptions& options() const { return options_; }

 private:
  class InProcessProducer;
  class InProcessConsumer;
  friend class InProcessProducer;
  friend class InProcessConsumer;

  struct Lifetime {
    std::mutex mu;  // Held by every running task; see "Lifetimes" above.
    bool alive = true;
  };

  struct ConnectedProducer {
    ProducerId id = 0;
    std::string name;
    uid_t uid = 0;
    pid_t pid = 0;
    Producer* endpoint = nullptr;
    std::unique_ptr<SharedMemory> shm;
    SharedMemoryAbi abi;
    std::vector<DataSourceDescriptor> data_sources;
    // Writer id -> target BufferId (0: no writer), from RegisterTraceWriter.
    std::array<BufferId, kMaxWriterId + 1> writer_buffers{};
    // Buffers of sessions this producer has a data source instance in.
    std::set<BufferId> allowed_buffers;
    uint64_t violations = 0;
    uint32_t machine_id = 0;  // ProducerOptions.machine_id.
    // When its last CommitData was applied (steady clock); epoch: none yet.
    std::chrono::steady_clock::time_point last_commit{};
    // It runs in this process, so it writes its chunks through the very
    // mapping the service reads them from: never read by pread.
    bool in_this_process = false;
    bool kicked = false;  // Disconnected for faults; inputs ignored.
    bool not_reading = false;  // Being dropped by the IPC layer (not reading).
  };

  enum class SessionState { kConfigured, kStarted, kStopping, kDisabled };

  struct DataSourceInstance {
    ProducerId producer = 0;
    std::string name;
    BufferId buffer = 0;
    bool will_notify_on_stop = false;
    bool handles_incremental_state_clear = false;
    bool started = false;  // Start sent, and acked if the producer acks starts.
    bool stopped = false;
  };

  struct SessionProducer {  // Kept after the producer disconnects.
    uid_t uid = 0;
    pid_t pid = 0;
    uint32_t machine_id = 0;
  };

  // A trigger a session acted on: written into its trace as a Trigger packet.
  struct ReceivedTrigger {
    std::string name;
    std::string producer_name;
    uid_t producer_uid = 0;
    uint64_t boot_ns = 0;
  };

  struct TracingSession {
    TracingSessionId id = 0;
    // 0: none (detached, or the consumer went away: `orphaned`).
    ConsumerId consumer = 0;
    perfetto::protos::TraceConfig config;
    // Session control (tracing_service_control.cc).
    std::string key;         // SessionOptions.key or Detach's; "" none.
    uid_t owner_uid = 0;     // Of the consumer that created it.
    bool detached = false;   // Runs on for a later Attach.
    bool orphaned = false;   // Its consumer went away: freed once written.
    TracingSessionId cloned_from = 0;  // A clone: ended from birth, no producers.
    uint64_t created_ms = 0;  // Boot clock.
    std::string output_path, output_temp_path;  // SessionOptions, listed.
    // Not write_into_file: the file the service writes when the session ends
    // with no consumer to read it (ConsumerEndpoint::EnableTracing).
    ScopedFd end_output;
    // Detached once: the service writes end_output at the end even if a
    // consumer attached since (it waits for the end, then uses the file).
    bool service_writes_file = false;
    uint64_t file_bytes = 0;  // `file`'s bytes written, seen on the service thread.
    // Once a detached session ended and its file was written its buffers are
    // freed; these stats stand in for them.
    bool buffers_released = false;
    std::shared_ptr<perfetto::protos::TraceStats> final_stats;
    SessionState state = SessionState::kConfigured;
    std::vector<BufferId> buffers;  // Index: TraceConfig.buffers index.
    std::map<DataSourceInstanceId, DataSourceInstance> instances;
    std::map<ProducerId, SessionProducer> producers;
    // (producer << 16 | writer) -> trusted_packet_sequence_id.
    std::map<uint32_t, uint32_t> sequence_ids;
    uint32_t next_sequence_id = 0;
    // write_into_file: the writer is used on the service thread only.
    std::shared_ptr<TraceFileWriter> file;
    // SessionOptions.rotation: the session's files, the one `file` writes
    // (its .recording name), when it began (boot clock) and the stats then:
    // each file's trailer holds the stats of its own period.
    std::unique_ptr<TraceFileRotation> rotation;
    std::string file_name;
    uint64_t file_started_ns = 0;
    std::shared_ptr<perfetto::protos::TraceStats> stats_at_file_start;
    bool rotation_failed = false;  // The next file could not be made: no more cuts.
    // What the next file gets at its head besides the service's packets, so
    // that each file has them however the cut fell (in a backlog the service
    // reads after the producers wrote them again, or at the session's end):
    // the newest system_info and cpu_info packets and the process_tree
    // packets read since the session began, the oldest left out beyond an
    // eighth of a file (CarryStatePacketLocked; later ones, the rescans at
    // each cut, name the same processes again).
    // By machine (0: this one; relayed guests have their own).
    std::map<uint32_t, std::string> carried_system_info, carried_cpu_info;
    std::deque<std::string> carried_process_trees;
    size_t carried_process_tree_bytes = 0;
    // The newest FtraceStats packet of each sequence: at a cut the file
    // before ends with it as END_OF_TRACE and the next begins with it as
    // START_OF_TRACE, so the kernel's losses are counted once, in the file
    // of the period they fell in (to the last counters read before the cut).
    std::map<uint32_t, std::string> newest_ftrace_stats;
    // The next file's head: newest_ftrace_stats as START_OF_TRACE.
    std::vector<std::string> carried_ftrace_starts;
    // The time cut's flush came with ClearIncrementalState already.
    bool cut_state_requested = false;
    // A write into `file` before its time is posted (a buffer's lap half
    // full: WriteEarlyIfLapHalfFullLocked), or the lap is half full of data
    // the reads hold back; set and cleared by each write (PeriodicWriteIntoFile).
    bool early_write_posted = false;
    uint32_t flush_timeout_ms = 0;
    // The periodic flush at rest (SessionOptions.rest_flush_period_ms): its
    // ceiling (0: fixed period), the period now, and the session's bytes
    // written into its buffers at the last periodic flush.
    uint32_t rest_flush_period_ms = 0;
    uint32_t flush_period_now_ms = 0;
    uint64_t bytes_in_at_last_flush = 0;
    // Service packets: written once each, in this order around the data.
    std::string start_clock_snapshot;
    std::string end_clock_snapshot;
    bool header_emitted = false;   // Trace config + start snapshot.
    bool trailer_emitted = false;  // End snapshot + TraceStats.
    // A read in slices: the buffer being read and whether its pass is open.
    size_t read_buffer_index = 0;
    bool read_pass_open = false;
    bool stop_phase = false;       // StopDataSource sent to every instance.
    bool finalize_posted = false;
    bool all_started_notified = false;  // MaybeNotifyAllStartedLocked ran its course.
    std::string disable_error;
    // Triggers (tracing_service_triggers.cc). The session's data is held
    // back from readers while it waits for its first START/STOP trigger.
    std::vector<ReceivedTrigger> received_triggers;
    size_t triggers_emitted = 0;    // Trigger packets read out so far.
    bool trigger_stop_scheduled = false;
    // Stats.
    uint64_t flushes_requested = 0;
    uint64_t flushes_succeeded = 0;
    uint64_t flushes_failed = 0;
    int final_flush_outcome = 0;  // TraceStats.FinalFlushOutcome
    uint64_t invalid_packets = 0;
    // TraceStats.sluice_service_stats (protos/sluice/service_stats.proto).
    uint32_t producers_disconnected = 0;
    uint32_t producers_disconnected_not_reading = 0;
    uint32_t producers_disconnected_for_faults = 0;
    uint64_t chunks_lost_being_written = 0;
    uint64_t chunks_lost_writer_unknown = 0;
    uint64_t chunks_scraped = 0;
    // Relayed machines (service/relay/): what each cost the session, and
    // the generation of its clock sync written into the file being written.
    std::map<uint32_t, sluice::protos::RelayMachineStats> machines;
    std::map<uint32_t, uint64_t> machine_sync_written;
  };

  struct BufferEntry {
    std::unique_ptr<TraceBuffer> buffer;
    uint64_t size_bytes = 0;
    TracingSessionId session = 0;
    // Violations the service found before the chunk reached the buffer
    // (bad header/packets); added to the buffer's abi_violations.
    uint64_t extra_abi_violations = 0;
  };

  struct PendingFlush {
    TracingSessionId session = 0;
    std::set<ProducerId> pending;
    std::function<void(bool)> done;
    uint64_t timeout_timer = 0;  // Cancelled when the last producer acks.
  };

  void Log(const std::string& line) const;

  // Every task the service posts goes through these (Lifetime check).
  void PostTask(std::function<void()> task);
  // Returns the timer's id, for CancelDelayedTask.
  uint64_t PostDelayedTask(std::function<void()> task, uint32_t delay_ms);
  void CancelDelayedTask(uint64_t timer_id);
  // Queues a call into a producer's endpoint; skipped if it is gone.
  void PostProducerCallLocked(ProducerId producer, std::function<void(Producer*)> call);
  // Waits until no task is running (unless on the service thread).
  void WaitForRunningTaskLocked(std::unique_lock<std::mutex>* lock);

  // Producers.
  ProducerId AllocateProducerIdLocked();
  void DisconnectProducer(ProducerId producer);
  void CommitData(ProducerId producer, const CommitDataRequest& request);
  void RegisterTraceWriter(ProducerId producer, uint16_t writer_id, uint32_t target_buffer);
  void UnregisterTraceWriter(ProducerId producer, uint16_t writer_id);
  void RegisterDataSource(ProducerId producer, const DataSourceDescriptor& descriptor);
  void UnregisterDataSource(ProducerId producer, const std::string& name);
  void NotifyDataSourceStarted(ProducerId producer, DataSourceInstanceId id);
  void NotifyDataSourceStopped(ProducerId producer, DataSourceInstanceId id);
  void NotifyFlushComplete(ProducerId producer, FlushRequestId id);

  ConnectedProducer* FindProducerLocked(ProducerId id);
  // Register (target_buffer > 0) or unregister (0) a writer of producer `id`.
  // Like CommitData, never waits for mu_: the producer's arbiter sends it
  // from the thread that drains its commit queue (a data source's reader),
  // and queues it with the commits, in order.
  void SetWriterBuffer(ProducerId id, uint16_t writer_id, uint32_t target_buffer);
  void SetWriterBufferLocked(ProducerId id, uint16_t writer_id, uint32_t target_buffer);
  // Counts one fault; disconnects the producer at the threshold.
  void ViolationLocked(ConnectedProducer* producer, BufferEntry* buffer);
  // The buffer `target` if `producer` may write into it, else null (and
  // counts the discard unless the buffer belonged to an ended session).
  BufferEntry* WritableBufferLocked(ConnectedProducer* producer, BufferId target, bool* expired);
  // `memfd`: the SMB's file to pread the chunk from, or -1 (the mapping).
  void MoveChunkLocked(ConnectedProducer* producer, uint32_t page, uint32_t chunk, BufferId target,
                       int memfd);
  // MoveChunkLocked's second half: the chunk is in scratch_ (header, then
  // payload), read from the SMB or copied from a relay, with `result`.
  void StoreChunkCopyLocked(ConnectedProducer* producer, ChunkReadResult result,
                            const ChunkCopy& copy, BufferId target);
  void CommitCopiedChunks(ProducerId producer, const std::vector<CopiedChunk>& chunks,
                          const std::vector<LostChunks>& lost, const CommitDataRequest& request);
  void ApplyPatchesLocked(ConnectedProducer* producer, const std::vector<ChunkPatch>& patches);
  // Moves the SMB's Complete chunks into their writers' buffers. With
  // `session`, only chunks for that session's buffers. Counts
  // chunks_scraped, service-wide and in the session of each chunk's buffer.
  // Returns the Complete chunks left behind because their writer was never
  // registered (the service cannot tell their buffer).
  uint64_t ScrapeProducerLocked(ConnectedProducer* producer, const TracingSession* session);
  // Chunks of the producer's SMB in state BeingWritten (page header words
  // only: the chunks themselves belong to the producer's writers).
  uint64_t CountChunksBeingWrittenLocked(const ConnectedProducer* producer) const;
  // Sessions not yet disabled in which `producer` has a data source instance.
  std::vector<TracingSession*> LiveSessionsOfLocked(ProducerId producer);
  // Forgets the producers that left the session and have nothing left in
  // its buffers: their pid, their trusted sequence ids and the ids
  // themselves, which become free for new producers. Keeps a session that
  // outlives many producers (thousands an hour connecting and leaving) from
  // growing and from running out of the 16-bit producer ids. Between read
  // passes only.
  void ForgetGoneProducersLocked(TracingSession* session);

  // Sessions.
  TracingSession* SessionForConsumerLocked(ConsumerId consumer);
  // The session named `key` (its key, or its unique_session_name while it
  // runs); clones are never found. Null if none.
  TracingSession* FindSessionByKeyLocked(const std::string& key);
  // Why `key` cannot name a new session (bad form, or in use), or Ok.
  Status CheckNewKeyLocked(const std::string& key, const TracingSession* except);
  // Refuses a consumer whose uid is neither the session's owner nor root.
  Status CheckOwnerLocked(ConsumerId consumer, const TracingSession* session,
                          const std::string& what);
  // The consumer went away: see RemoveConsumer.
  void OrphanSessionLocked(TracingSession* session);
  // The session ended with no consumer: free it (orphaned) or, detached,
  // free its buffers and keep the rest for Attach.
  void SettleEndedSessionLocked(TracingSession* session);
  // CloneSession's copy, once the source was flushed, into `rings`: one
  // fresh buffer per source buffer, created and faulted in beforehand
  // without the mutex.
  StatusOr<CloneResult> CloneLocked(ConsumerId consumer, TracingSessionId source, bool flushed,
                                    std::vector<std::unique_ptr<TraceBuffer>>* rings);
  SessionInfo DescribeSessionLocked(const TracingSession* session);
  TracingSession* FindSessionLocked(TracingSessionId id);
  Status StartTracingLocked(TracingSession* session);
  // Triggers (tracing_service_triggers.cc).
  Status CheckTriggerConfigLocked(const perfetto::protos::TraceConfig& config) const;
  // EnableTracing's part for sessions with triggers: START_TRACING waits
  // for one (deferred, ended at trigger_timeout_ms if none comes).
  void ArmTriggerTimeoutLocked(TracingSession* session);
  // True while readers must get nothing: a START/STOP session that received
  // no trigger yet (its data is held back; if none comes, none is written).
  bool WaitingForTriggerLocked(const TracingSession* session) const;
  // The session's triggers in words, for SessionInfo.triggers.
  std::string DescribeTriggersLocked(const TracingSession* session) const;
  // Trigger packets not read out yet, appended to *out.
  void EmitTriggerPacketsLocked(TracingSession* session, std::vector<std::string>* out);
  // Whether the service-wide trigger history allows `trigger` once more
  // within 24 h (max_per_24_h), and the skip_probability draw lets it pass.
  bool TriggerAllowedLocked(const perfetto::protos::TraceConfig::TriggerConfig::Trigger& trigger,
                            uint64_t now_ns);
  // EnableTracing's steps.
  Status CheckTraceConfigLocked(const perfetto::protos::TraceConfig& config) const;
  StatusOr<std::shared_ptr<TraceFileWriter>> OpenTraceFileLocked(
      ConsumerId consumer, const perfetto::protos::TraceConfig& config, ScopedFd output_fd);
  Status CreateBuffersLocked(TracingSession* session);
  void MaybeStartDataSourceLocked(TracingSession* session, ConnectedProducer* producer,
                                  const DataSourceDescriptor& descriptor);
  void DisableTracingLocked(TracingSession* session, const std::string& error);
  void OnFinalFlushDone(TracingSessionId id, bool success);
  void StopDataSourcesLocked(TracingSession* session);
  // The instance stopped (ack, unregistered, producer gone); finalizes a
  // stopping session once every instance has.
  void MarkInstanceStoppedLocked(TracingSession* session, DataSourceInstanceId id);
  void FinalizeSession(TracingSessionId id);
  // Writes a session that ended into its file (service thread, no lock held
  // while writing), then notifies the consumer or settles the session.
  void WriteEndedSession(TracingSessionId id, std::shared_ptr<TraceFileWriter> file);
  void FreeSessionLocked(TracingSession* session);
  void FreeBuffersLocked(TracingSession* session);
  void FlushLocked(TracingSession* session, uint32_t timeout_ms, std::function<void(bool)> done);
  void OnFlushAckLocked(ProducerId producer, FlushRequestId id);
  void CompleteFlushLocked(FlushRequestId id, bool success);
  // The flush's timeout: the producers that did not answer are told
  // (Producer::OnFlushTimeout), then the flush fails.
  void FlushTimedOutLocked(FlushRequestId id);
  void PeriodicFlush(TracingSessionId id);
  void PeriodicClearIncrementalState(TracingSessionId id);
  // ClearIncrementalState to every instance of the session that handles it.
  void ClearIncrementalStateLocked(TracingSession* session);
  // --rotate (SessionOptions.rotation, trace_file_rotation.h). Due: the
  // file reached max_bytes or spans max_ms. RotateFile cuts: the next file
  // opens and takes every packet read from then on (header first), the
  // finished one gets its period's trailer and its final name, and the
  // producers are asked to write their state again (ClearIncrementalState).
  bool RotationDueLocked(const TracingSession& session) const;
  // A cut at the file's max_ms (none without one).
  void ScheduleTimedRotationLocked(TracingSession* session);
  void RotateFile(TracingSessionId id);
  // Renames the session's file being written to its final name (and
  // applies --keep); tells the consumer.
  void FinishRotatedFileLocked(TracingSession* session, const std::string& recording_name);
  // Calls `call` with the consumer's observer in a task of its own, no lock
  // held; nothing if the consumer is gone by then.
  void PostConsumerCallLocked(ConsumerId consumer, std::function<void(Consumer*)> call);
  // Keeps a copy of a packet the next file needs at its head (TracingSession::carried_*).
  void CarryStatePacketLocked(TracingSession* session, uint32_t field, uint32_t sequence_id,
                              uint32_t machine_id, const std::string& packet);
  // The relayed machines' clock syncs not yet in the session's file (all of
  // them at a file's head), appended to *out.
  void EmitMachineSyncsLocked(TracingSession* session, std::vector<std::string>* out);
  // A live session's entry for relayed machine `id` (made on first use).
  sluice::protos::RelayMachineStats* SessionMachineLocked(TracingSession* session, uint32_t id);
  // The TraceStats a file's trailer holds: since its start when rotating.
  perfetto::protos::TraceStats FileTraceStatsLocked(TracingSession* session);
  // Writes what the buffers hold into the session's file; again after the
  // write period when `reschedule` (without it, the periodic flush calls it
  // after each flush: SessionOptions.rest_flush_period_ms).
  void PeriodicWriteIntoFile(TracingSessionId id, bool reschedule = true);
  // After a commit into `buffer`: if its unread records fill half its lap
  // and its session streams into a file, writes the file now rather than at
  // the period's end. A producer that commits faster than a period's worth
  // of lap would otherwise make the lap grow (TraceBuffer, "Laps"), and each
  // page of the larger lap is faulted in and zeroed once, in the committing
  // thread: a third of sluice record's CPU on a 50 MB markers run.
  void WriteEarlyIfLapHalfFullLocked(const BufferEntry& buffer);
  bool AnyLapHalfFullLocked(const TracingSession& s) const;
  // The next periodic flush's delay, from what the session took in since
  // the last (SessionOptions.rest_flush_period_ms).
  uint32_t NextFlushPeriodLocked(TracingSession* s);
  // Reads the session in slices and writes them (no lock held while
  // writing) until nothing is left, the file is full, or byte_limit bytes.
  // False if the session went away.
  // *bytes_read: the packet bytes read; *drained: nothing more was readable.
  bool WriteSlicesIntoFile(TracingSessionId id, TraceFileWriter* file, uint64_t byte_limit,
                           Status* status, uint64_t* bytes_read = nullptr, bool* drained = nullptr);
  // The same for a rotating session: up to `budget` bytes, cutting the
  // file each time it is due (RotationDueLocked); *file follows the cuts.
  bool WriteSlicesRotating(TracingSessionId id, std::shared_ptr<TraceFileWriter>* file, uint64_t budget,
                           Status* status);
  // Collects readable packets (plus the service packets due) into *out, up
  // to about max_bytes; true if it stopped at the budget (more may follow).
  // The end-of-session packets go to *trailer if given, else to *out, once
  // everything else was read.
  bool ReadPacketsLocked(TracingSession* session, std::vector<std::string>* out,
                         std::vector<std::string>* trailer, size_t max_bytes);
  perfetto::protos::TraceStats GetTraceStatsLocked(TracingSession* session);
  void NotifyConsumerLocked(TracingSession* session, const std::string& error);
  // Tells the session's consumer, once, when every instance has started.
  void MaybeNotifyAllStartedLocked(TracingSession* session);

  EventLoop* const loop_;
  const TracingServiceOptions options_;
  std::shared_ptr<Lifetime> lifetime_;

  // Locks mu_ for a call in, and applies the deferred commits right after
  // locking and again right before unlocking: they take effect in the order
  // they were made and before anything else the holder does, as if their
  // threads had waited for mu_.
  class ServiceLock {
   public:
    explicit ServiceLock(TracingService* service);
    ~ServiceLock();
    ServiceLock(const ServiceLock&) = delete;
    ServiceLock& operator=(const ServiceLock&) = delete;

   private:
    TracingService* const service_;
  };
  // Commits (and the writer registrations that come with them) queued while
  // mu_ was held, flattened into vectors that keep their capacity: queuing
  // one allocates nothing once they have grown (a holder stalled in the
  // allocator must not stall the queuing thread too).
  struct DeferredCommits {
    struct Entry {
      ProducerId producer;
      uint32_t moves;
      uint32_t patches;
      uint64_t flush_request_id;
      // A writer registration (SetWriterBuffer) instead of a commit: no
      // moves or patches.
      bool sets_writer_buffer;
      uint16_t writer_id;
      uint32_t target_buffer;
    };
    std::vector<Entry> entries;
    std::vector<ChunkToMove> moves;
    std::vector<ChunkPatch> patches;

    void Reserve();
    void Append(ProducerId producer, const CommitDataRequest& request);
    void AppendWriterBuffer(ProducerId producer, uint16_t writer_id, uint32_t target_buffer);
    void Clear();
  };
  // Queues what `append` adds to deferred_commits_ (under deferred_mu_) and
  // makes sure a holder or a task on the service thread applies it.
  template <typename Append>
  void DeferProducerCall(const Append& append);
  void CommitDataLocked(ProducerId producer, const CommitDataRequest& request);
  // Applies what deferred_commits_ holds, oldest first.
  void ApplyDeferredCommitsLocked();

  // Calls made while mu_ was held (CommitData, SetWriterBuffer). deferred_mu_ guards only
  // the vector and is never held while waiting for anything: a commit thread
  // takes it for one append, the mu_ holder for one swap. Order: mu_, then
  // deferred_mu_.
  std::mutex deferred_mu_;
  DeferredCommits deferred_commits_;
  // Whether deferred_commits_ may be non-empty: spares ServiceLock the
  // deferred_mu_ lock when there is nothing (the vectors themselves are only
  // touched under deferred_mu_). Set by a queuing thread, cleared by the
  // holder that takes the queue.
  std::atomic<bool> has_deferred_commits_{false};
  // A task that applies the queue is waiting on the service thread: at most
  // one is posted. Set by the queuing thread that posts it, cleared by the
  // task before it locks.
  //
  // Both flags are seq_cst, and that is what makes the pair safe: a queuing
  // thread sets has_deferred_commits_ and then finds deferred_task_posted_
  // set (so it posts nothing) only if the task's clearing store comes later
  // in the single total order; the task's load of has_deferred_commits_,
  // after that store, then sees the push. Weaker orders would let the task
  // read a stale false and leave the commit queued until the next holder.
  std::atomic<bool> deferred_task_posted_{false};
  // Written by the thread holding mu_, read by any thread without it
  // (heap_release_events()). Relaxed: a count whose change is all a reader
  // looks for; it orders no other memory, and the reader acts a second later.
  std::atomic<uint64_t> heap_release_events_{0};

  std::mutex mu_;  // Guards everything below.
  std::map<ProducerId, std::unique_ptr<ConnectedProducer>> producers_;
  ProducerId last_producer_id_ = 0;
  std::map<ConsumerId, Consumer*> consumers_;
  std::map<ConsumerId, PeerCredentials> consumer_peers_;
  ConsumerId last_consumer_id_ = 0;
  std::map<TracingSessionId, std::unique_ptr<TracingSession>> sessions_;
  TracingSessionId last_session_id_ = 0;
  std::map<BufferId, BufferEntry> buffers_;
  BufferId next_buffer_id_ = 1;
  uint64_t total_buffer_bytes_ = 0;
  DataSourceInstanceId last_instance_id_ = 0;
  std::map<FlushRequestId, PendingFlush> pending_flushes_;
  FlushRequestId last_flush_id_ = 0;
  ServiceStats stats_;
  uint64_t data_sources_seen_ = 0;
  // Machines relayed to this service, by machine_id: their names (a relay
  // that comes back under its name gets its id again) and newest clock sync.
  struct RelayedMachine {
    std::string name;
    uint32_t links = 0;  // Its relay links now open (a new one may overlap the old).
    uint64_t cut_frames = 0;  // Counted as lost in transit, not yet uncounted.
    std::string sync_packet;  // A TracePacket with remote_clock_sync and machine_id.
    uint64_t sync_generation = 0;
    int64_t clock_offset_ns = 0;
    uint64_t clock_error_ns = 0;
  };
  std::map<uint32_t, RelayedMachine> machines_;
  // Triggers acted on in the last 24 h, by name (boot clock ns): for
  // TriggerConfig.Trigger.max_per_24_h.
  std::map<std::string, std::vector<uint64_t>> trigger_history_;
  // Chunk copy scratch (guarded by mu_): the commit path allocates nothing.
  std::unique_ptr<uint8_t[]> scratch_;
  // Deferred commits being applied (guarded by mu_; swapped with
  // deferred_commits_ so both keep their capacity), and the request each is
  // rebuilt into.
  DeferredCommits applying_commits_;
  CommitDataRequest applying_request_;
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_TRACING_SERVICE_H_
