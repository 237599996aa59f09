// The interfaces between the tracing service and its producers and consumers.
//
// They are the same in one process (`sluice record`: TracingService hands out
// in-process objects) and across processes (sluiced: ProducerIpcClient and
// ConsumerIpcClient implement the same interfaces over the sockets), so a
// program switches between the two by swapping one object:
//
//   producer side                           service side
//   ─────────────                           ────────────
//   Producer (you implement) ◀───── the service calls Setup/Start/
//                                           Stop/Flush/ClearIncrementalState
//   ProducerEndpoint (you hold)    ─────▶ RegisterDataSource, CommitData
//     = TracingService::ConnectProducer()     (through commit_data_sink()),
//     or ProducerIpcClient::Connect()         Notify*
//
//   ConsumerEndpoint (you hold)    ─────▶ EnableTracing, StartTracing,
//     = TracingService::ConnectConsumer()     Flush, DisableTracing,
//     or ConsumerIpcClient::Connect()         ReadBuffers, GetTraceStats,
//                                             Detach, Attach, ListSessions,
//                                             CloneSession
//
// Threads. Producer methods are called on one thread at a time, in
// the order the service issued them: the service thread in-process, the IPC
// client's receive thread across processes. They must return quickly (post
// long work elsewhere) and may call back into the ProducerEndpoint. The
// ProducerEndpoint and its CommitDataSink may be used from any thread.
// ConsumerEndpoint methods block until the service answered; call them from
// one thread at a time, never from a Producer callback.
#ifndef SLUICE_SERVICE_SERVICE_ENDPOINTS_H_
#define SLUICE_SERVICE_SERVICE_ENDPOINTS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "perfetto/config/trace_config.pb.h"
#include "service/packet_compressor.h"
#include "service/trace_file_rotation.h"
#include "shm/commit_data.h"
#include "shm/base/status.h"

namespace perfetto::protos {
class DataSourceConfig;
class TraceStats;
}  // namespace perfetto::protos

namespace sluice {

// Service-wide unique, never reused within one service instance.
using DataSourceInstanceId = uint64_t;
using FlushRequestId = uint64_t;

struct DataSourceDescriptor {
  std::string name;  // e.g. "linux.ftrace"
  // The producer will call NotifyDataSourceStarted / NotifyDataSourceStopped
  // for instances of this data source. Otherwise the service assumes an
  // instance started / stopped as soon as it sent Start / Stop.
  bool will_notify_on_start = false;
  bool will_notify_on_stop = false;
  // ClearIncrementalState is sent only to data sources that handle it.
  bool handles_incremental_state_clear = false;
};

struct ProducerOptions {
  std::string name;  // e.g. "sluice-probes"; matched by producer_name_filter.
  // SMB size and page size wanted, in bytes; 0 = the service's default. The
  // service clamps them (docs/SERVICE.md, "Shared memory").
  uint32_t shm_size_hint_bytes = 0;
  uint32_t shm_page_size_hint_bytes = 0;
  // The producer's own SMB, when it made one (Perfetto SDK producers): a
  // memfd sealed against shrinking, which the service maps (dup'ed: the
  // caller keeps its fd) instead of creating one. Its page size is
  // shm_page_size_hint_bytes as given; docs/IPC.md has the rules.
  int producer_shm_fd = -1;
  // The machine the producer runs on: 0 for this one; a guest's producer
  // relayed to this service (service/relay/relay_server.h) has its
  // machine's id, stamped on its packets as TracePacket.machine_id. Such a
  // producer's uid and pid are the guest's, not checked against the
  // producer allowlist (the relay socket's permissions admit the guest).
  uint32_t machine_id = 0;
};

// A chunk copied out of a producer's shared memory by someone else: a
// guest's relay, which sends it as bytes (service/relay/). `bytes` is the
// chunk header followed by the payload.
struct CopiedChunk {
  uint32_t target_buffer = 0;
  std::string_view bytes;
};

// A relayed producer's chunks that will not come (the relay dropped them):
// those of `writer_id` up to `last_chunk_id` that are missing.
struct LostChunks {
  uint32_t target_buffer = 0;
  uint16_t writer_id = 0;
  uint32_t last_chunk_id = 0;
};

// Implemented by the producer. The config's target_buffer is the service's
// buffer id: pass it unchanged to SharedMemoryArbiter::CreateTraceWriter.
class Producer {
 public:
  virtual ~Producer() = default;
  virtual void SetupDataSource(DataSourceInstanceId id,
                               const perfetto::protos::DataSourceConfig& config) = 0;
  virtual void StartDataSource(DataSourceInstanceId id,
                               const perfetto::protos::DataSourceConfig& config) = 0;
  virtual void StopDataSource(DataSourceInstanceId id) = 0;
  // Commit everything the listed instances wrote, then answer with
  // SharedMemoryArbiter::FlushPendingCommitData(id) (its CommitData carries
  // the id) and/or ProducerEndpoint::NotifyFlushComplete(id).
  virtual void Flush(FlushRequestId id, const std::vector<DataSourceInstanceId>& instances) = 0;
  virtual void ClearIncrementalState(const std::vector<DataSourceInstanceId>& instances) = 0;
  // The service stopped waiting for flush `id`: this producer did not answer
  // within the flush timeout. Nothing to do for a producer; the service's IPC
  // port uses it to drop a producer that has not even read the request
  // (docs/SERVICE.md, "Faults").
  virtual void OnFlushTimeout(FlushRequestId id) { (void)id; }
  // The service dropped this producer (too many protocol/ABI violations, or
  // the socket closed). Later calls on the connection are ignored.
  virtual void OnDisconnect(const std::string& reason) { (void)reason; }
  // Answer to ProducerEndpoint::ActivateTriggers: how many sessions acted on
  // the triggers (0: none waits for them, or their limits skipped them).
  virtual void OnTriggersActivated(uint32_t sessions_triggered) { (void)sessions_triggered; }
};

// A producer that runs no data source (`sluice trigger`, benchmarks): the
// service never asks it to, and its answers are no-ops.
class ProducerWithoutDataSources : public Producer {
 public:
  void SetupDataSource(DataSourceInstanceId, const perfetto::protos::DataSourceConfig&) override {}
  void StartDataSource(DataSourceInstanceId, const perfetto::protos::DataSourceConfig&) override {}
  void StopDataSource(DataSourceInstanceId) override {}
  void Flush(FlushRequestId, const std::vector<DataSourceInstanceId>&) override {}
  void ClearIncrementalState(const std::vector<DataSourceInstanceId>&) override {}
};

// The producer's handle on the service. Destroying it disconnects: the
// service scrapes the Complete chunks left in the SMB into the trace.
class ProducerEndpoint {
 public:
  virtual ~ProducerEndpoint() = default;

  // The SMB, already mapped. Build the SharedMemoryArbiter over it.
  virtual uint8_t* shm_start() const = 0;
  virtual uint32_t shm_size() const = 0;
  virtual uint32_t shm_page_size() const = 0;
  // Where the arbiter sends commits and writer (un)registrations.
  virtual CommitDataSink* commit_data_sink() = 0;

  virtual void RegisterDataSource(const DataSourceDescriptor& descriptor) = 0;
  virtual void UnregisterDataSource(const std::string& name) = 0;
  virtual void NotifyDataSourceStarted(DataSourceInstanceId id) = 0;
  virtual void NotifyDataSourceStopped(DataSourceInstanceId id) = 0;
  virtual void NotifyFlushComplete(FlushRequestId id) = 0;
  // Fires triggers (TraceConfig.trigger_config; docs/SERVICE.md,
  // "Triggers"). Answered by Producer::OnTriggersActivated.
  virtual void ActivateTriggers(const std::vector<std::string>& names) = 0;
  // A relayed producer's commit (service/relay/relay_server.h): `chunks`
  // arrive as bytes instead of in the SMB; `lost` are chunks the relay
  // dropped; then `request`'s patches and flush answer, as CommitData. Only
  // the service's in-process endpoint takes it; elsewhere it is a bug to
  // call.
  virtual void CommitCopiedChunks(const std::vector<CopiedChunk>& chunks, const std::vector<LostChunks>& lost,
                                  const CommitDataRequest& request) {
    (void)chunks;
    (void)lost;
    (void)request;
  }
};

// What the service knows right now (`sluice doctor`, `sluice stats`).
struct ServiceState {
  struct ProducerInfo {
    uint32_t id = 0;
    std::string name;
    int32_t pid = 0;
    int32_t uid = 0;
  };
  struct DataSource {
    uint32_t producer_id = 0;
    std::string name;
  };
  std::vector<ProducerInfo> producers;
  std::vector<DataSource> data_sources;
  uint32_t num_sessions = 0;
  uint32_t num_sessions_started = 0;
  std::string service_version;
};

inline constexpr char kServiceVersion[] = "sluiced 0.1";

// How the end error of a session with START_TRACING or STOP_TRACING
// triggers begins when none of them fired before trigger_timeout_ms: the
// session recorded nothing worth keeping (Perfetto returns no data then
// either). A consumer tells this outcome from a fault by this prefix.
inline constexpr char kNoTriggerError[] = "no trigger fired";

// What a consumer gives a session besides its TraceConfig (EnableTracing).
struct SessionOptions {
  // Names the session for Detach, Attach, CloneSession and ListSessions
  // (`sluice record --detach=KEY`): 1 to 64 characters of [A-Za-z0-9_.:@+-],
  // not starting with '-'. Unique among the service's sessions, keys and
  // unique_session_names alike. Empty: none (Detach may give one).
  std::string key;
  // Where the consumer puts the trace when the session ends (output_path)
  // and the file it is written into meanwhile (output_temp_path). The
  // service never opens them: it lists them and hands them to whoever
  // attaches, who puts the file in place.
  std::string output_path;
  std::string output_temp_path;
  // The longest the periodic flush (TraceConfig.flush_period_ms) may wait
  // while the session takes in less than kRestBytesPerSecond: from the
  // configured period it doubles each time, and one period that brings more
  // puts it back (service/rest_flush_period.h). With write_into_file the
  // file is then written after each periodic flush rather than on its own
  // timer. 0: the periods stay as configured. `sluice record` sets it for
  // the periods it chooses itself, so that a recorder at rest is not woken
  // every second (a config's own periods are kept as written).
  uint32_t rest_flush_period_ms = 0;
  // Cut the trace into files that each load alone (`sluice record --rotate`,
  // service/trace_file_rotation.h). Needs write_into_file; the output fd
  // given to EnableTracing is then the directory the files go in (O_DIRECTORY).
  FileRotationOptions rotation;
};

// One session as ListSessions describes it (`sluice sessions`).
struct SessionInfo {
  enum class State { kConfigured, kStarted, kStopping, kEnded };
  uint64_t id = 0;
  std::string key;
  std::string unique_session_name;
  uint32_t owner_uid = 0;      // The uid that created it (clones: that cloned it).
  int32_t consumer_pid = 0;    // 0: no consumer (detached, or it went away).
  State state = State::kConfigured;
  bool detached = false;
  uint64_t cloned_from = 0;    // A clone: the id of the session it copies.
  uint64_t age_ms = 0;         // Since EnableTracing (clones: since the clone).
  uint32_t duration_ms = 0;    // From the config; 0: until stopped.
  bool write_into_file = false;
  std::vector<std::string> data_sources;  // Config names, each once, in order.
  struct Buffer {
    uint64_t size_bytes = 0;
    bool discard = false;      // DISCARD; else RING_BUFFER.
    uint64_t bytes_held = 0;   // Unread records now (0 once the buffers are freed).
  };
  std::vector<Buffer> buffers;
  uint64_t file_bytes = 0;     // Written into its file so far (service-written files).
  std::string output_path;     // SessionOptions.
  std::string output_temp_path;
  // Losses so far, summed over the buffers (TraceStats' names).
  uint64_t chunks_overwritten = 0;
  uint64_t chunks_discarded = 0;
  uint64_t patches_failed = 0;
  uint64_t abi_violations = 0;
  uint64_t trace_writer_packet_loss = 0;
  uint64_t flushes_failed = 0;
  // sluice_service_stats: chunks_lost_being_written + chunks_lost_writer_unknown.
  uint64_t chunks_lost = 0;
  std::string error;           // It ended on this error.
  // Its triggers (trigger_config), in words: "waiting for a START_TRACING
  // trigger (go), up to 10m00s", "STOP_TRACING trigger 'bug' received"; "" none.
  std::string triggers;
};

struct SessionList {
  std::vector<SessionInfo> sessions;  // By id.
  uint32_t other_users = 0;  // Sessions of other uids, not listed (not root).
};

// What Attach hands the new consumer.
struct AttachedSession {
  SessionInfo info;
  perfetto::protos::TraceConfig config;
};

struct CloneResult {
  uint64_t source_id = 0;  // The session cloned.
  bool flushed = false;    // Every producer answered the flush before the copy.
  // What the session's config asks its file to be compressed with: the
  // snapshot's file is written so too.
  TraceCompression compression;
};

// The consumer's handle on the service: one tracing session at a time.
// Destroying it (the consumer going away) ends a session it did not detach
// cleanly: it is stopped as DisableTracing does and, when the service writes
// its file, the file is finished (trailer and all) before it is freed.
class ConsumerEndpoint {
 public:
  virtual ~ConsumerEndpoint() = default;

  // Creates the session. With config.write_into_file, the service writes the
  // trace to `output_fd` (dup'ed; the caller keeps its own fd), or, if
  // output_fd < 0, to config.output_path (only for root consumers and the
  // in-process consumer). Without write_into_file the consumer reads the
  // buffers itself; `output_fd`, if given, is where the service writes the
  // whole trace when the session ends with no consumer to read it (detached,
  // or the consumer went away before its first read). Starts at once unless
  // config.deferred_start.
  virtual Status EnableTracing(const perfetto::protos::TraceConfig& config, int output_fd = -1,
                               const SessionOptions& options = {}) = 0;
  virtual Status StartTracing() = 0;
  // Flushes every data source of the session; true if all answered within
  // timeout_ms (0: config.flush_timeout_ms, default 5000).
  virtual StatusOr<bool> Flush(uint32_t timeout_ms = 0) = 0;
  // Asks the session to stop: final flush, stop data sources, final packets,
  // file closed. Returns once the request is accepted; use
  // WaitForTracingDisabled to wait for the end.
  virtual Status DisableTracing() = 0;
  // Waits up to timeout_ms for the session to be disabled (by
  // DisableTracing, duration_ms, max_file_size_bytes or an error). True if it
  // is; *error gets the reason when it ended on an error.
  // Returns false early when a CLONE_SNAPSHOT trigger of the session fired
  // (TakeCloneTriggers) or a rotating session finished a file
  // (TakeFinishedFiles).
  // kWaitForever: no timeout. It also returns false as soon as the fd given
  // to SetWaitInterruptFd() is readable.
  virtual bool WaitForTracingDisabled(uint32_t timeout_ms, std::string* error = nullptr) = 0;
  static constexpr uint32_t kWaitForever = UINT32_MAX;
  // An fd (a stop signal's WakeFd) that cuts WaitForTracingDisabled short
  // when readable, so that a recorder can wait without a timeout and still
  // see its stop signal at once; -1: none. The caller drains it.
  virtual void SetWaitInterruptFd(int fd) = 0;
  // The CLONE_SNAPSHOT triggers of the session that fired since the last
  // call, by name, oldest first: the consumer snapshots the session once for
  // each (CloneSession, on a connection of its own: this one has its session).
  virtual std::vector<std::string> TakeCloneTriggers() = 0;
  // A rotating session's files finished since the last call (renamed to
  // their final names), oldest first, relative to the directory given at
  // EnableTracing. WaitForTracingDisabled returns false early when one is
  // waiting here, so that a recorder can hand each to its --on-rotate hook.
  virtual std::vector<std::string> TakeFinishedFiles() = 0;
  // Drains the central buffers: `on_packet` gets each serialized TracePacket
  // (without the Trace field-1 record header; see AppendTracePacketRecord).
  // After the session is disabled the last read also returns the final
  // clock snapshot and TraceStats.
  virtual Status ReadBuffers(const std::function<void(std::string_view packet)>& on_packet) = 0;
  virtual StatusOr<perfetto::protos::TraceStats> GetTraceStats() = 0;
  // Destroys the session and its buffers.
  virtual Status FreeBuffers() = 0;
  // Producers and data sources connected now; needs no session.
  virtual StatusOr<ServiceState> QueryServiceState() = 0;

  // ---- Session control (docs/SERVICE.md, "Detach, attach and clone"). ----
  // Only the uid that created a session, or root, may attach to it or clone
  // it; ListSessions shows other uids' sessions to root only.

  // Lets the session run on without this consumer, under `key` (empty: the
  // key given at EnableTracing). The service must be able to write its file:
  // write_into_file, or an output_fd given at EnableTracing. Afterwards this
  // consumer has no session (it may create another or go away).
  virtual Status Detach(const std::string& key) = 0;
  // Makes the detached session `key` this consumer's, as if it had created
  // it: WaitForTracingDisabled, DisableTracing, GetTraceStats and FreeBuffers
  // work on it. The service goes on writing its file (ReadBuffers is
  // refused): TracingDisabled comes once the file is complete, at once for
  // a session that ended while detached.
  virtual StatusOr<AttachedSession> Attach(const std::string& key) = 0;
  // The service's sessions (`sluice sessions`); needs no session.
  virtual StatusOr<SessionList> ListSessions() = 0;
  // Copies the running session `key` (its key or unique_session_name) into a
  // new, ended session of this consumer's, after flushing its producers so
  // the copy holds their data up to this call. Read it with ReadBuffers
  // (the last read ends with its TraceStats), then FreeBuffers. The session
  // cloned goes on recording, undisturbed. Refused for write_into_file
  // sessions (what was written is in their file, not their buffers) and for
  // DISCARD buffers (use RING_BUFFER for snapshots).
  virtual StatusOr<CloneResult> CloneSession(const std::string& key) = 0;
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_SERVICE_ENDPOINTS_H_
