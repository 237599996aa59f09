// TracingService: consumers, sessions, flushes, reading and file writing.
// The life cycle (docs/SERVICE.md has the diagram):
//
//   EnableTracing ─▶ kConfigured ─StartTracing─▶ kStarted ─DisableTracing──▶
//   kStopping: final flush (flush_timeout_ms) ─▶ StopDataSource to every
//   instance, wait for acks (data_source_stop_timeout_ms) ─▶ FinalizeSession:
//   scrape SMBs, end clock snapshot, kDisabled, last file write, consumer
//   notified ─▶ FreeBuffers: session and buffers destroyed.
//
// Without a consumer (detached, or it went away: tracing_service_control.cc)
// the service writes the file at the end (write_into_file, or the
// end_output fd of a session the consumer would have read), then frees an
// orphaned session, or a detached one's buffers (the rest waits for Attach).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "perfetto/common/trace_stats.pb.h"
#include "perfetto/config/data_source_config.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "sluice/service_stats.pb.h"
#include "service/regex_match.h"
#include "service/rest_flush_period.h"
#include "service/service_packets.h"
#include "service/trace_file_rotation.h"
#include "service/trace_file_writer.h"
#include "service/trace_stats_period.h"
#include "service/tracing_service.h"
#include "service/trusted_packet.h"
#include "shm/base/clock.h"

namespace sluice {
namespace {

constexpr uint32_t kDefaultFlushTimeoutMs = 5000;
constexpr uint32_t kDefaultStopTimeoutMs = 5000;
constexpr uint32_t kDefaultFileWritePeriodMs = 5000;
constexpr uint32_t kMinFileWritePeriodMs = 100;
constexpr uint32_t kMinPeriodicMs = 10;
constexpr uint64_t kBufferGranularity = 4096;

// `packet` (an FtraceStats packet) as the given phase, stamped `now_ns`:
// a rotation's cut ends one file and begins the next with the kernel's
// counters as last read.
std::string FtraceStatsAs(const std::string& packet, perfetto::protos::FtraceStats::Phase phase, uint64_t now_ns) {
  perfetto::protos::TracePacket p;
  if (!p.ParseFromString(packet)) return "";
  p.mutable_ftrace_stats()->set_phase(phase);
  p.set_timestamp(now_ns);
  return p.SerializeAsString();
}

bool ProducerMatches(const perfetto::protos::TraceConfig::DataSource& ds,
                     const std::string& producer_name) {
  if (ds.producer_name_filter_size() == 0 && ds.producer_name_regex_filter_size() == 0)
    return true;
  for (const std::string& name : ds.producer_name_filter())
    if (name == producer_name) return true;
  for (const std::string& pattern : ds.producer_name_regex_filter())
    if (RegexFullMatch(pattern, producer_name)) return true;
  return false;
}

}  // namespace

// ---- Consumers ----------------------------------------------------------------

ConsumerId TracingService::AddConsumer(Consumer* observer, const PeerCredentials& peer) {
  ServiceLock lock(this);
  ConsumerId id = ++last_consumer_id_;
  consumers_[id] = observer;
  consumer_peers_[id] = peer;
  stats_.consumers_connected = consumers_.size();
  return id;
}

Status TracingService::CheckConsumerAllowed(const PeerCredentials& peer) {
  const auto& uids = options_.consumer_uid_allowlist;
  const auto& gids = options_.consumer_gid_allowlist;
  if (uids.empty() && gids.empty()) return Status::Ok();
  auto listed = [](const auto& list, auto value) {
    return std::find(list.begin(), list.end(), value) != list.end();
  };
  if (listed(uids, peer.uid) || listed(gids, peer.gid)) return Status::Ok();
  for (gid_t g : peer.groups) {
    if (listed(gids, g)) return Status::Ok();
  }
  Log("sluiced: refused consumer (pid " + std::to_string(peer.pid) + ", uid " +
      std::to_string(peer.uid) + "): neither its uid nor its groups are in the consumer allowlists");
  return Status::Error("uid " + std::to_string(peer.uid) +
                       " may not record or read traces here: neither it nor its groups are in "
                       "sluiced's --consumer-uid-allowlist / --consumer-gid-allowlist");
}

void TracingService::RemoveConsumer(ConsumerId consumer) {
  std::unique_lock<std::mutex> lock(mu_);
  ApplyDeferredCommitsLocked();
  if (TracingSession* s = SessionForConsumerLocked(consumer)) OrphanSessionLocked(s);
  heap_release_events_.fetch_add(1, std::memory_order_relaxed);
  consumers_.erase(consumer);
  consumer_peers_.erase(consumer);
  stats_.consumers_connected = consumers_.size();
  // A notification may be running into the observer: wait for it.
  WaitForRunningTaskLocked(&lock);
}

TracingService::TracingSession* TracingService::SessionForConsumerLocked(ConsumerId consumer) {
  for (auto& [id, s] : sessions_)
    if (s->consumer == consumer) return s.get();
  return nullptr;
}

TracingService::TracingSession* TracingService::FindSessionLocked(TracingSessionId id) {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second.get();
}

namespace {

// A buffers {} entry's size in bytes, rounded up to kBufferGranularity.
uint64_t BufferBytes(const perfetto::protos::TraceConfig::BufferConfig& b) {
  return (static_cast<uint64_t>(b.size_kb()) * 1024 + kBufferGranularity - 1) /
         kBufferGranularity * kBufferGranularity;
}

}  // namespace

Status TracingService::EnableTracing(ConsumerId consumer,
                                     const perfetto::protos::TraceConfig& config,
                                     ScopedFd output_fd, const SessionOptions& options) {
  ServiceLock lock(this);
  if (!consumers_.count(consumer)) return Status::Error("unknown consumer");
  if (SessionForConsumerLocked(consumer))
    return Status::Error("this consumer already has a tracing session; FreeBuffers first");
  SLUICE_RETURN_IF_ERROR(CheckTraceConfigLocked(config));
  if (!options.key.empty()) SLUICE_RETURN_IF_ERROR(CheckNewKeyLocked(options.key, nullptr));
  if (const std::string& name = config.unique_session_name(); !name.empty()) {
    if (TracingSession* other = FindSessionByKeyLocked(name))
      return Status::Error("a session named '" + name + "' exists already (session " +
                           std::to_string(other->id) +
                           "; unique_session_name allows one at a time): stop it or pick another name");
    if (name == options.key)
      return Status::Error("the key '" + name + "' is also the config's unique_session_name; drop one");
  }
  std::shared_ptr<TraceFileWriter> file;
  std::unique_ptr<TraceFileRotation> rotation;
  std::string file_name;
  if (options.rotation.enabled()) {
    if (!config.write_into_file())
      return Status::Error("rotation needs a session that streams into its file (write_into_file); "
                           "--ring and --discard sessions write once, at the end");
    // A service running as another user (sluiced as root) creates the files:
    // only in a directory the consumer owns, so that it cannot make the
    // service write where it could not.
    const PeerCredentials& peer = consumer_peers_[consumer];
    struct stat dir_stat;
    if (output_fd.valid() && peer.uid != 0 && peer.uid != geteuid() &&
        (fstat(output_fd.get(), &dir_stat) != 0 || dir_stat.st_uid != peer.uid))
      return Status::Error("sluiced writes rotated files only into a directory uid " + std::to_string(peer.uid) +
                           " owns; pick one of yours for -o");
    SLUICE_ASSIGN_OR_RETURN(TraceFileRotation r,
                            TraceFileRotation::Create(std::move(output_fd), options.rotation, peer.uid, peer.gid));
    rotation = std::make_unique<TraceFileRotation>(std::move(r));
    SLUICE_ASSIGN_OR_RETURN(ScopedFd first, rotation->OpenNext(&file_name));
    // The rotation size is the cap that matters: the writer drops nothing.
    file = std::make_shared<TraceFileWriter>(std::move(first), 0, TraceCompressionOf(config));
  } else if (config.write_into_file()) {
    SLUICE_ASSIGN_OR_RETURN(file, OpenTraceFileLocked(consumer, config, std::move(output_fd)));
  }

  auto session = std::make_unique<TracingSession>();
  TracingSession* s = session.get();
  s->id = ++last_session_id_;
  s->consumer = consumer;
  s->config = config;
  s->file = std::move(file);
  s->rotation = std::move(rotation);
  s->file_name = std::move(file_name);
  if (!s->file) s->end_output = std::move(output_fd);
  s->key = options.key;
  s->owner_uid = consumer_peers_[consumer].uid;
  s->created_ms = BootTimeNs() / 1000000;
  s->output_path = options.output_path;
  s->output_temp_path = options.output_temp_path;
  if (config.flush_period_ms() > 0 && options.rest_flush_period_ms > 0)
    s->rest_flush_period_ms = std::max(options.rest_flush_period_ms, config.flush_period_ms());
  s->next_sequence_id = kFirstProducerSequenceId;
  s->flush_timeout_ms = config.flush_timeout_ms() ? config.flush_timeout_ms() : kDefaultFlushTimeoutMs;
  if (Status st = CreateBuffersLocked(s); !st.ok()) {
    if (s->rotation) s->rotation->Abandon(s->file_name);
    return st;
  }
  sessions_[s->id] = std::move(session);
  // The machines relayed now are in its stats from the start (connects 1).
  for (const auto& [id, m] : machines_)
    if (m.links) SessionMachineLocked(s, id);
  const bool start_trigger = config.has_trigger_config() &&
      config.trigger_config().trigger_mode() == perfetto::protos::TraceConfig::TriggerConfig::START_TRACING;
  if (config.has_trigger_config()) ArmTriggerTimeoutLocked(s);
  if (!config.deferred_start() && !start_trigger) return StartTracingLocked(s);
  return Status::Ok();
}

// What the service refuses before it allocates anything: no or too many
// buffers, more memory than it allows, bad target buffers or regexes.
Status TracingService::CheckTraceConfigLocked(const perfetto::protos::TraceConfig& config) const {
  SLUICE_RETURN_IF_ERROR(CheckTriggerConfigLocked(config));
  if (config.buffers_size() == 0)
    return Status::Error("the trace config has no buffers {}; add one (e.g. size_kb: 65536)");
  if (static_cast<uint32_t>(config.buffers_size()) > options_.max_buffers_per_session)
    return Status::Error("the trace config has " + std::to_string(config.buffers_size()) +
                         " buffers; at most " + std::to_string(options_.max_buffers_per_session));
  uint64_t total = 0;
  for (const auto& b : config.buffers()) {
    if (b.size_kb() == 0) return Status::Error("a buffers {} entry has size_kb 0; give it a size");
    total += BufferBytes(b);
  }
  if (total_buffer_bytes_ + total > options_.max_total_buffer_bytes)
    return Status::Error("the trace config asks for " + std::to_string(total >> 10) +
                         " KiB of buffers; the service allows " +
                         std::to_string((options_.max_total_buffer_bytes - total_buffer_bytes_) >> 10) +
                         " KiB more; reduce buffers.size_kb");
  for (const auto& ds : config.data_sources()) {
    if (ds.config().target_buffer() >= static_cast<uint32_t>(config.buffers_size()))
      return Status::Error("data source '" + ds.config().name() + "' has target_buffer " +
                           std::to_string(ds.config().target_buffer()) + " but the config has " +
                           std::to_string(config.buffers_size()) + " buffers");
    for (const std::string& pattern : ds.producer_name_regex_filter()) {
      bool valid = false;
      RegexFullMatch(pattern, "", &valid);
      if (!valid)
        return Status::Error("producer_name_regex_filter '" + pattern +
                             "' is not a valid (POSIX extended) regex");
    }
  }
  return Status::Ok();
}

// The consumer's fd, or output_path opened by the service (root only: the
// service may run as root and must not write where the consumer cannot).
StatusOr<std::shared_ptr<TraceFileWriter>> TracingService::OpenTraceFileLocked(
    ConsumerId consumer, const perfetto::protos::TraceConfig& config, ScopedFd output_fd) {
  if (!output_fd.valid()) {
    if (config.output_path().empty())
      return Status::Error("write_into_file needs an output file: pass its fd or set output_path");
    uid_t uid = consumer_peers_[consumer].uid;
    if (uid != 0 && uid != getuid())
      return Status::Error("output_path may only be used by root; pass the output file's fd");
    output_fd.reset(open(config.output_path().c_str(),
                         O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!output_fd.valid())
      return Status::Error("cannot create " + config.output_path() + ": " + strerror(errno));
  }
  return std::make_shared<TraceFileWriter>(std::move(output_fd), config.max_file_size_bytes(),
                                           TraceCompressionOf(config));
}

// One TraceBuffer per buffers {} entry; on failure none is left allocated.
Status TracingService::CreateBuffersLocked(TracingSession* s) {
  for (const auto& b : s->config.buffers()) {
    uint64_t size = BufferBytes(b);
    auto policy = b.fill_policy() == perfetto::protos::TraceConfig::BufferConfig::DISCARD
                      ? TraceBuffer::FillPolicy::kDiscard
                      : TraceBuffer::FillPolicy::kRingBuffer;
    std::unique_ptr<TraceBuffer> buffer = TraceBuffer::Create(static_cast<size_t>(size), policy);
    if (!buffer) {
      for (BufferId id : s->buffers) {
        total_buffer_bytes_ -= buffers_[id].size_bytes;
        buffers_.erase(id);
      }
      return Status::Error("cannot allocate a " + std::to_string(size >> 10) +
                           " KiB trace buffer (out of memory?); reduce buffers.size_kb");
    }
    // Every session that records writes its first lap, so it is faulted in
    // now, before tracing starts: the page faults and kernel zeroing would
    // otherwise land on whichever thread copies the first chunks in, while
    // the traced workload runs (docs/PERFORMANCE.md, "The first lap, faulted
    // in up front"). At most kFirstLapBytes under the lock: 9 ms the first
    // time a process takes fresh memory on the build machine's guest, well
    // under 1 ms after.
    buffer->Prefault(buffer->lap_size());
    BufferId id = next_buffer_id_++;
    BufferEntry& entry = buffers_[id];
    entry.buffer = std::move(buffer);
    entry.size_bytes = size;
    entry.session = s->id;
    total_buffer_bytes_ += size;
    s->buffers.push_back(id);
  }
  return Status::Ok();
}

Status TracingService::StartTracing(ConsumerId consumer) {
  ServiceLock lock(this);
  TracingSession* s = SessionForConsumerLocked(consumer);
  if (!s) return Status::Error("no tracing session: call EnableTracing first");
  return StartTracingLocked(s);
}

Status TracingService::StartTracingLocked(TracingSession* s) {
  if (s->state != SessionState::kConfigured)
    return Status::Error("the tracing session was already started");
  s->state = SessionState::kStarted;
  s->start_clock_snapshot = MakeClockSnapshotPacket();
  for (auto& [pid, p] : producers_) {
    if (p->kicked) continue;
    for (const DataSourceDescriptor& d : p->data_sources) MaybeStartDataSourceLocked(s, p.get(), d);
  }
  MaybeNotifyAllStartedLocked(s);
  const TracingSessionId sid = s->id;
  const auto& c = s->config;
  // With STOP_TRACING and CLONE_SNAPSHOT triggers, trigger_timeout_ms ends
  // the session (ArmTriggerTimeoutLocked), as in Perfetto.
  const bool trigger_timeout_ends = c.has_trigger_config() &&
      c.trigger_config().trigger_mode() != perfetto::protos::TraceConfig::TriggerConfig::START_TRACING;
  if (c.duration_ms() > 0 && !trigger_timeout_ends) {
    PostDelayedTask(
        [this, sid] {
          ServiceLock lock(this);
          TracingSession* session = FindSessionLocked(sid);
          if (session && session->state == SessionState::kStarted) DisableTracingLocked(session, "");
        },
        c.duration_ms());
  }
  if (c.flush_period_ms() > 0) {
    s->flush_period_now_ms = std::max(c.flush_period_ms(), kMinPeriodicMs);
    PostDelayedTask([this, sid] { PeriodicFlush(sid); }, s->flush_period_now_ms);
  }
  if (c.incremental_state_config().clear_period_ms() > 0)
    PostDelayedTask([this, sid] { PeriodicClearIncrementalState(sid); },
                    std::max(c.incremental_state_config().clear_period_ms(), kMinPeriodicMs));
  if (s->rotation) {
    s->file_started_ns = BootTimeNs();
    ScheduleTimedRotationLocked(s);
  }
  // At rest the periodic flush writes the file (PeriodicFlush).
  if (s->file) PostTask([this, sid, timer = s->rest_flush_period_ms == 0] { PeriodicWriteIntoFile(sid, timer); });
  return Status::Ok();
}

void TracingService::MaybeStartDataSourceLocked(TracingSession* s, ConnectedProducer* p,
                                                const DataSourceDescriptor& d) {
  for (const auto& cds : s->config.data_sources()) {
    if (cds.config().name() != d.name || !ProducerMatches(cds, p->name)) continue;
    DataSourceInstanceId iid = ++last_instance_id_;
    BufferId buffer = s->buffers[cds.config().target_buffer()];
    perfetto::protos::DataSourceConfig config = cds.config();
    config.set_target_buffer(buffer);
    config.set_tracing_session_id(s->id);
    DataSourceInstance& inst = s->instances[iid];
    inst.producer = p->id;
    inst.name = d.name;
    inst.buffer = buffer;
    inst.will_notify_on_stop = d.will_notify_on_stop;
    inst.handles_incremental_state_clear = d.handles_incremental_state_clear;
    inst.started = !d.will_notify_on_start;
    s->producers[p->id] = SessionProducer{p->uid, p->pid, p->machine_id};
    p->allowed_buffers.insert(buffer);
    PostProducerCallLocked(p->id, [iid, config](Producer* e) {
      e->SetupDataSource(iid, config);
      e->StartDataSource(iid, config);
    });
  }
}

void TracingService::NotifyDataSourceStarted(ProducerId producer, DataSourceInstanceId id) {
  ServiceLock lock(this);
  for (auto& [sid, s] : sessions_) {
    auto it = s->instances.find(id);
    if (it == s->instances.end() || it->second.producer != producer || it->second.started) continue;
    it->second.started = true;
    MaybeNotifyAllStartedLocked(s.get());
  }
}

void TracingService::MaybeNotifyAllStartedLocked(TracingSession* s) {
  if (s->all_started_notified || s->state != SessionState::kStarted) return;
  for (const auto& [iid, inst] : s->instances)
    if (!inst.started) return;
  s->all_started_notified = true;
  PostConsumerCallLocked(s->consumer, [](Consumer* observer) { observer->OnAllDataSourcesStarted(); });
}

void TracingService::NotifyDataSourceStopped(ProducerId producer, DataSourceInstanceId id) {
  ServiceLock lock(this);
  for (auto& [sid, s] : sessions_) {
    auto it = s->instances.find(id);
    if (it != s->instances.end() && it->second.producer == producer)
      MarkInstanceStoppedLocked(s.get(), id);
  }
}

void TracingService::MarkInstanceStoppedLocked(TracingSession* s, DataSourceInstanceId id) {
  auto it = s->instances.find(id);
  if (it == s->instances.end() || it->second.stopped) return;
  it->second.stopped = true;
  if (s->state != SessionState::kStopping || !s->stop_phase || s->finalize_posted) return;
  for (auto& [iid, inst] : s->instances)
    if (!inst.stopped) return;
  s->finalize_posted = true;
  PostTask([this, sid = s->id] { FinalizeSession(sid); });
}

// ---- Stopping -----------------------------------------------------------------

Status TracingService::DisableTracing(ConsumerId consumer) {
  ServiceLock lock(this);
  TracingSession* s = SessionForConsumerLocked(consumer);
  if (!s) return Status::Error("no tracing session: call EnableTracing first");
  DisableTracingLocked(s, "");
  return Status::Ok();
}

void TracingService::DisableAllSessions() {
  ServiceLock lock(this);
  for (auto& [sid, s] : sessions_) DisableTracingLocked(s.get(), "");
}

bool TracingService::AllSessionsDisabled() {
  ServiceLock lock(this);
  for (auto& [sid, s] : sessions_)
    if (s->state != SessionState::kDisabled) return false;
  return true;
}

void TracingService::DisableTracingLocked(TracingSession* s, const std::string& error) {
  if (!error.empty() && s->disable_error.empty()) s->disable_error = error;
  const TracingSessionId sid = s->id;
  switch (s->state) {
    case SessionState::kConfigured:
      s->state = SessionState::kStopping;
      s->stop_phase = true;
      s->finalize_posted = true;
      PostTask([this, sid] { FinalizeSession(sid); });
      return;
    case SessionState::kStarted:
      s->state = SessionState::kStopping;
      FlushLocked(s, s->flush_timeout_ms, [this, sid](bool ok) { OnFinalFlushDone(sid, ok); });
      return;
    case SessionState::kStopping:
    case SessionState::kDisabled:
      return;
  }
}

void TracingService::OnFinalFlushDone(TracingSessionId sid, bool success) {
  ServiceLock lock(this);
  TracingSession* s = FindSessionLocked(sid);
  if (!s || s->state != SessionState::kStopping || s->stop_phase) return;
  s->final_flush_outcome = success ? perfetto::protos::TraceStats::FINAL_FLUSH_SUCCEEDED
                                   : perfetto::protos::TraceStats::FINAL_FLUSH_FAILED;
  StopDataSourcesLocked(s);
}

void TracingService::StopDataSourcesLocked(TracingSession* s) {
  s->stop_phase = true;
  bool waiting = false;
  for (auto& [iid, inst] : s->instances) {
    if (inst.stopped) continue;
    PostProducerCallLocked(inst.producer, [iid = iid](Producer* e) { e->StopDataSource(iid); });
    const ConnectedProducer* p = FindProducerLocked(inst.producer);
    if (inst.will_notify_on_stop && p && !p->kicked && !p->not_reading)
      waiting = true;
    else
      inst.stopped = true;
  }
  const TracingSessionId sid = s->id;
  if (!waiting) {
    s->finalize_posted = true;
    PostTask([this, sid] { FinalizeSession(sid); });
    return;
  }
  uint32_t timeout = s->config.data_source_stop_timeout_ms() ? s->config.data_source_stop_timeout_ms()
                                                             : kDefaultStopTimeoutMs;
  PostDelayedTask(
      [this, sid] {
        {
          ServiceLock lock(this);
          TracingSession* session = FindSessionLocked(sid);
          if (!session || session->finalize_posted) return;
          session->finalize_posted = true;
        }
        FinalizeSession(sid);
      },
      timeout);
}

void TracingService::FinalizeSession(TracingSessionId sid) {
  std::shared_ptr<TraceFileWriter> file;
  {
    ServiceLock lock(this);
    TracingSession* s = FindSessionLocked(sid);
    if (!s || s->state == SessionState::kDisabled) return;
    // Complete chunks no one committed (a flush that timed out) still count.
    // Chunks still being written, or completed by a writer the producer had
    // not registered, will not reach this session: lost. Counted only for
    // producers writing for no other session, whose chunks can only be this
    // one's (the service cannot look inside a chunk being written).
    for (auto& [pid, sp] : s->producers) {
      ConnectedProducer* p = FindProducerLocked(pid);
      if (!p) continue;
      const uint64_t writer_unknown = p->kicked ? 0 : ScrapeProducerLocked(p, s);
      if (LiveSessionsOfLocked(pid).size() != 1) continue;
      const uint64_t being_written = CountChunksBeingWrittenLocked(p);
      s->chunks_lost_being_written += being_written;
      s->chunks_lost_writer_unknown += writer_unknown;
      stats_.chunks_lost_being_written += being_written;
      stats_.chunks_lost_writer_unknown += writer_unknown;
    }
    for (auto& [pid, p] : producers_)
      for (BufferId b : s->buffers) p->allowed_buffers.erase(b);
    s->end_clock_snapshot = MakeClockSnapshotPacket();
    s->state = SessionState::kDisabled;
    // The final read starts a fresh pass (kFinal), whatever was open.
    s->read_pass_open = false;
    s->read_buffer_index = 0;
    // No consumer to read it: the service writes the file it was given.
    if (!s->file && (s->consumer == 0 || s->service_writes_file) && s->end_output.valid() &&
        !s->header_emitted)
      s->file = std::make_shared<TraceFileWriter>(std::move(s->end_output),
                                                  s->config.max_file_size_bytes(),
                                                  TraceCompressionOf(s->config));
    if (s->file) {
      file = s->file;
    } else if (s->consumer != 0) {
      NotifyConsumerLocked(s, s->disable_error);
    } else {
      SettleEndedSessionLocked(s);
    }
  }
  if (file) WriteEndedSession(sid, std::move(file));
}

void TracingService::WriteEndedSession(TracingSessionId sid, std::shared_ptr<TraceFileWriter> file) {
  // Service thread, no lock held while writing. Nothing is committed into a
  // disabled session, so this ends.
  Status st;
  // A rotating session may cut its last buffers' worth into several files
  // (by size; a cut by time now would only make a file of the end).
  bool rotating;
  {
    ServiceLock lock(this);
    TracingSession* s = FindSessionLocked(sid);
    if (!s) return;
    rotating = s->rotation != nullptr;
  }
  if (rotating ? !WriteSlicesRotating(sid, &file, ~0ull, &st) : !WriteSlicesIntoFile(sid, file.get(), ~0ull, &st))
    return;
  // The cap stopped the slices early: read the rest (not written) to get
  // the trailer.
  std::vector<std::string> trailer;
  {
    ServiceLock lock(this);
    TracingSession* s = FindSessionLocked(sid);
    if (!s) return;
    if (!s->trailer_emitted) {
      std::vector<std::string> rest;
      ReadPacketsLocked(s, &rest, &trailer, ~size_t{0});
    }
  }
  Status st_trailer = file->WritePackets(trailer, /*trailer=*/true);
  ServiceLock lock(this);
  TracingSession* s = FindSessionLocked(sid);
  if (!s) return;
  // After a write error the writer's last word replaces its first: it also
  // counts the packets of this final read that the file misses.
  if (file->failed() && (s->disable_error.empty() ||
                         std::string_view(s->disable_error).starts_with(kTraceFileErrorPrefix)))
    s->disable_error = file->FailureMessage();
  if (!st.ok() && s->disable_error.empty()) s->disable_error = st.message();
  if (!st_trailer.ok() && s->disable_error.empty()) s->disable_error = st_trailer.message();
  s->file_bytes = file->bytes_written();
  s->file.reset();  // With `file` below, the last reference: closes the file.
  if (s->rotation && !s->file_name.empty()) {
    file.reset();
    FinishRotatedFileLocked(s, s->file_name);
    s->file_name.clear();
  }
  if (s->consumer != 0) {
    NotifyConsumerLocked(s, s->disable_error);
  } else {
    SettleEndedSessionLocked(s);
  }
}

void TracingService::NotifyConsumerLocked(TracingSession* s, const std::string& error) {
  PostConsumerCallLocked(s->consumer, [error](Consumer* observer) { observer->OnTracingDisabled(error); });
}

void TracingService::PostConsumerCallLocked(ConsumerId consumer, std::function<void(Consumer*)> call) {
  PostTask([this, consumer, call = std::move(call)] {
    Consumer* observer = nullptr;
    {
      ServiceLock lock(this);
      auto it = consumers_.find(consumer);
      if (it == consumers_.end()) return;
      observer = it->second;
    }
    // No lock held: the observer may call back into the service (and
    // RemoveConsumer waits for a running task before it returns).
    call(observer);
  });
}

Status TracingService::FreeBuffers(ConsumerId consumer) {
  ServiceLock lock(this);
  TracingSession* s = SessionForConsumerLocked(consumer);
  if (!s) return Status::Error("no tracing session to free");
  FreeSessionLocked(s);
  return Status::Ok();
}

void TracingService::FreeSessionLocked(TracingSession* s) {
  if (s->state == SessionState::kStarted || s->state == SessionState::kStopping) {
    for (auto& [iid, inst] : s->instances)
      if (!inst.stopped)
        PostProducerCallLocked(inst.producer,
                               [iid = iid](Producer* e) { e->StopDataSource(iid); });
  }
  std::vector<FlushRequestId> flushes;
  for (auto& [fid, f] : pending_flushes_)
    if (f.session == s->id) flushes.push_back(fid);
  for (FlushRequestId fid : flushes) CompleteFlushLocked(fid, false);
  FreeBuffersLocked(s);
  sessions_.erase(s->id);
  heap_release_events_.fetch_add(1, std::memory_order_relaxed);
}

void TracingService::FreeBuffersLocked(TracingSession* s) {
  for (auto& [pid, p] : producers_)
    for (BufferId b : s->buffers) p->allowed_buffers.erase(b);
  for (BufferId b : s->buffers) {
    total_buffer_bytes_ -= buffers_[b].size_bytes;
    buffers_.erase(b);
  }
  s->buffers.clear();
}

// ---- Flushes ------------------------------------------------------------------

void TracingService::Flush(ConsumerId consumer, uint32_t timeout_ms,
                           std::function<void(bool)> done) {
  ServiceLock lock(this);
  TracingSession* s = SessionForConsumerLocked(consumer);
  if (!s || s->state != SessionState::kStarted) {
    PostTask([done = std::move(done)] { done(false); });
    return;
  }
  FlushLocked(s, timeout_ms ? timeout_ms : s->flush_timeout_ms, std::move(done));
}

void TracingService::FlushLocked(TracingSession* s, uint32_t timeout_ms,
                                 std::function<void(bool)> done) {
  FlushRequestId fid = ++last_flush_id_;
  s->flushes_requested++;
  std::map<ProducerId, std::vector<DataSourceInstanceId>> by_producer;
  for (auto& [iid, inst] : s->instances) {
    if (inst.stopped) continue;
    ConnectedProducer* p = FindProducerLocked(inst.producer);
    if (p && !p->kicked && !p->not_reading) by_producer[inst.producer].push_back(iid);
  }
  if (by_producer.empty()) {
    s->flushes_succeeded++;
    PostTask([done = std::move(done)] { done(true); });
    return;
  }
  PendingFlush& pending = pending_flushes_[fid];
  pending.session = s->id;
  pending.done = std::move(done);
  for (auto& [pid, ids] : by_producer) {
    pending.pending.insert(pid);
    PostProducerCallLocked(pid, [fid, ids = ids](Producer* e) { e->Flush(fid, ids); });
  }
  pending.timeout_timer = PostDelayedTask(
      [this, fid] {
        ServiceLock lock(this);
        FlushTimedOutLocked(fid);
      },
      timeout_ms);
}

void TracingService::FlushTimedOutLocked(FlushRequestId id) {
  auto it = pending_flushes_.find(id);
  if (it == pending_flushes_.end()) return;
  for (ProducerId producer : it->second.pending)
    PostProducerCallLocked(producer, [id](Producer* e) { e->OnFlushTimeout(id); });
  CompleteFlushLocked(id, false);
}

void TracingService::OnFlushAckLocked(ProducerId producer, FlushRequestId id) {
  auto it = pending_flushes_.find(id);
  if (it == pending_flushes_.end()) return;
  it->second.pending.erase(producer);
  if (it->second.pending.empty()) CompleteFlushLocked(id, true);
}

void TracingService::CompleteFlushLocked(FlushRequestId id, bool success) {
  auto it = pending_flushes_.find(id);
  if (it == pending_flushes_.end()) return;
  if (TracingSession* s = FindSessionLocked(it->second.session))
    (success ? s->flushes_succeeded : s->flushes_failed)++;
  std::function<void(bool)> done = std::move(it->second.done);
  if (success) CancelDelayedTask(it->second.timeout_timer);
  pending_flushes_.erase(it);
  PostTask([done = std::move(done), success] { done(success); });
}

void TracingService::NotifyFlushComplete(ProducerId producer, FlushRequestId id) {
  ServiceLock lock(this);
  OnFlushAckLocked(producer, id);
}

void TracingService::PeriodicFlush(TracingSessionId sid) {
  ServiceLock lock(this);
  TracingSession* s = FindSessionLocked(sid);
  if (!s || s->state != SessionState::kStarted) return;
  std::function<void(bool)> done = [](bool) {};
  // With rest_flush_period_ms the file is written once the flush is done,
  // so that what it brought is on disk a period sooner.
  if (s->rest_flush_period_ms > 0 && s->file) done = [this, sid](bool) { PeriodicWriteIntoFile(sid, false); };
  FlushLocked(s, s->flush_timeout_ms, std::move(done));
  PostDelayedTask([this, sid] { PeriodicFlush(sid); }, NextFlushPeriodLocked(s));
}

uint32_t TracingService::NextFlushPeriodLocked(TracingSession* s) {
  const uint32_t base = std::max(s->config.flush_period_ms(), kMinPeriodicMs);
  if (s->rest_flush_period_ms == 0) return base;
  uint64_t bytes_in = 0;
  for (BufferId b : s->buffers) bytes_in += buffers_[b].buffer->stats().bytes_written;
  // This flush's own data is not in yet: the intake counted is the last
  // period's (its flush and what the producers committed meanwhile).
  const uint64_t intake = bytes_in - std::min(bytes_in, s->bytes_in_at_last_flush);
  s->bytes_in_at_last_flush = bytes_in;
  s->flush_period_now_ms = NextRestFlushPeriodMs(s->flush_period_now_ms, base, s->rest_flush_period_ms, intake);
  return s->flush_period_now_ms;
}

void TracingService::PeriodicClearIncrementalState(TracingSessionId sid) {
  ServiceLock lock(this);
  TracingSession* s = FindSessionLocked(sid);
  if (!s || s->state != SessionState::kStarted) return;
  ClearIncrementalStateLocked(s);
  PostDelayedTask([this, sid] { PeriodicClearIncrementalState(sid); },
                  std::max(s->config.incremental_state_config().clear_period_ms(), kMinPeriodicMs));
}

void TracingService::ClearIncrementalStateLocked(TracingSession* s) {
  std::map<ProducerId, std::vector<DataSourceInstanceId>> by_producer;
  for (auto& [iid, inst] : s->instances)
    if (!inst.stopped && inst.handles_incremental_state_clear) by_producer[inst.producer].push_back(iid);
  for (auto& [pid, ids] : by_producer)
    PostProducerCallLocked(pid, [ids = ids](Producer* e) { e->ClearIncrementalState(ids); });
}

// ---- Reading ------------------------------------------------------------------

bool TracingService::ReadPacketsLocked(TracingSession* s, std::vector<std::string>* out,
                                       std::vector<std::string>* trailer, size_t max_bytes) {
  const auto& builtin = s->config.builtin_data_sources();
  // A session waiting for its START/STOP trigger holds its data back; if
  // none comes, nothing at all is written (not even the header).
  if (WaitingForTriggerLocked(s)) return false;
  if (!s->header_emitted) {
    if (!builtin.disable_trace_config()) out->push_back(MakeTraceConfigPacket(s->config));
    out->push_back(MakeExtensionDescriptorPacket());
    if (!builtin.disable_clock_snapshotting() && !s->start_clock_snapshot.empty())
      out->push_back(s->start_clock_snapshot);
    // A rotation's next file: the state its producers wrote before the cut.
    for (const auto* by_machine : {&s->carried_system_info, &s->carried_cpu_info})
      for (const auto& [machine, p] : *by_machine) out->push_back(p);
    for (const std::string& p : s->carried_process_trees) out->push_back(p);
    for (std::string& p : s->carried_ftrace_starts) out->push_back(std::move(p));
    s->carried_ftrace_starts.clear();
    s->header_emitted = true;
  }
  EmitTriggerPacketsLocked(s, out);
  // Before any data read below: a relayed machine's packets need its clock
  // sync earlier in the file to land on this machine's timeline.
  EmitMachineSyncsLocked(s, out);
  size_t bytes = 0;
  std::string packet;
  while (s->read_buffer_index < s->buffers.size()) {
    TraceBuffer* buffer = buffers_[s->buffers[s->read_buffer_index]].buffer.get();
    if (!s->read_pass_open) {
      // After the end of the session nothing more will come: the final read
      // releases gaps and drops what can never be completed (counted).
      buffer->BeginRead(s->state == SessionState::kDisabled ? TraceBuffer::ReadMode::kFinal
                                                            : TraceBuffer::ReadMode::kIncremental);
      s->read_pass_open = true;
    }
    TraceBuffer::PacketSequenceProperties seq{};
    bool dropped = false;
    while (bytes < max_bytes && buffer->ReadNextTracePacket(&packet, &seq, &dropped, kMaxTrustedFieldsBytes)) {
      uint32_t key = (static_cast<uint32_t>(seq.producer) << 16) | seq.writer;
      auto [it, inserted] = s->sequence_ids.try_emplace(key, s->next_sequence_id);
      if (inserted) s->next_sequence_id++;
      TrustedFields trusted;
      trusted.uid = static_cast<int32_t>(seq.producer_uid);
      trusted.sequence_id = it->second;
      auto sp = s->producers.find(seq.producer);
      trusted.pid = sp != s->producers.end() ? static_cast<int32_t>(sp->second.pid) : 0;
      trusted.machine_id = sp != s->producers.end() ? sp->second.machine_id : 0;
      trusted.previous_packet_dropped = dropped;
      uint32_t state_field = 0;
      if (!StampTrustedFields(&packet, trusted, s->rotation ? &state_field : nullptr)) {
        s->invalid_packets++;
        continue;
      }
      if (state_field)
        CarryStatePacketLocked(s, state_field, trusted.sequence_id, trusted.machine_id, packet);
      bytes += packet.size();
      out->push_back(std::move(packet));
      packet.clear();
    }
    if (bytes >= max_bytes) return true;  // The pass stays open for the next call.
    s->read_pass_open = false;
    s->read_buffer_index++;
  }
  s->read_buffer_index = 0;
  ForgetGoneProducersLocked(s);
  if (s->state == SessionState::kDisabled && !s->trailer_emitted) {
    std::vector<std::string>* dst = trailer ? trailer : out;
    // A rotating session's last file ends with the kernel's counters too:
    // the producers' own END_OF_TRACE may have been read into an earlier
    // file (a read pass goes sequence by sequence).
    if (s->rotation) {
      for (const auto& [seq, stats] : s->newest_ftrace_stats) {
        std::string end = FtraceStatsAs(stats, perfetto::protos::FtraceStats::END_OF_TRACE, BootTimeNs());
        if (!end.empty()) dst->push_back(std::move(end));
      }
    }
    // The last file of a rotating session may have begun after the end's
    // snapshot was taken (cut in the final write): its own is taken now, so
    // the file's clocks only go forward.
    if (s->rotation) s->end_clock_snapshot = MakeClockSnapshotPacket();
    if (!builtin.disable_clock_snapshotting()) dst->push_back(s->end_clock_snapshot);
    perfetto::protos::TraceStats file_stats = FileTraceStatsLocked(s);
    for (const auto& m : file_stats.sluice_service_stats().relay_machines())
      dst->push_back(MakeMachineTraceStatsPacket(m));
    dst->push_back(MakeTraceStatsPacket(file_stats));
    s->trailer_emitted = true;
  }
  return false;
}

Status TracingService::ReadBuffers(ConsumerId consumer, std::vector<std::string>* packets,
                                   bool* more, size_t max_bytes) {
  ServiceLock lock(this);
  *more = false;
  TracingSession* s = SessionForConsumerLocked(consumer);
  if (!s) return Status::Error("no tracing session: call EnableTracing first");
  if (s->config.write_into_file())
    return Status::Error("the session writes into a file (write_into_file); read the file instead");
  if (s->service_writes_file)
    return Status::Error("sluiced writes this session into its file (it was detached): "
                         "wait for its end and read the file");
  *more = ReadPacketsLocked(s, packets, nullptr, max_bytes);
  heap_release_events_.fetch_add(1, std::memory_order_relaxed);  // Its answer, once sent.
  return Status::Ok();
}

// Reads the session in slices of kReadSliceBytes and writes each slice
// without the service mutex held. Returns false if the session is gone.
bool TracingService::WriteSlicesIntoFile(TracingSessionId sid, TraceFileWriter* file,
                                         uint64_t byte_limit, Status* status, uint64_t* bytes_read,
                                         bool* drained) {
  uint64_t done = 0;
  bool more = true;
  for (;;) {
    std::vector<std::string> packets, trailer;
    {
      ServiceLock lock(this);
      TracingSession* s = FindSessionLocked(sid);
      if (!s) return false;
      // No more than the limit asks (a rotating file's room left), give or
      // take a packet.
      const uint64_t room = byte_limit > done ? byte_limit - done : 1;
      more = ReadPacketsLocked(s, &packets, &trailer, static_cast<size_t>(std::min<uint64_t>(kReadSliceBytes, room)));
    }
    for (const std::string& p : packets) done += p.size();
    *status = file->WritePackets(packets);
    // The trailer (only once the session is disabled) may use the reserve.
    // After a write error it goes to the writer all the same, to be counted
    // with what the file misses.
    if (!trailer.empty()) {
      Status trailer_status = file->WritePackets(trailer, /*trailer=*/true);
      if (status->ok()) *status = trailer_status;
    }
    if (!status->ok() || file->full() || !more || done >= byte_limit) break;
  }
  // A compressed file gets the open container too: the file holds all that
  // was read (it lags no more than uncompressed), and ends between two
  // containers.
  if (status->ok()) *status = file->Flush();
  if (bytes_read) *bytes_read = done;
  if (drained) *drained = !more;
  return true;
}

bool TracingService::WriteSlicesRotating(TracingSessionId sid, std::shared_ptr<TraceFileWriter>* file,
                                         uint64_t budget, Status* status) {
  // Each step reads no more than the file has room for (room in file bytes,
  // which compression makes fewer than the bytes read: a step then leaves
  // room, and the next fills it), at least kMinRotatingStepBytes so that a
  // nearly full file does not take tiny compressed containers.
  constexpr uint64_t kMinRotatingStepBytes = 64u << 10;
  uint64_t spent = 0;
  while (spent < budget) {
    uint64_t step = budget - spent;
    {
      ServiceLock lock(this);
      TracingSession* s = FindSessionLocked(sid);
      if (!s) return false;
      if (s->rotation->options().max_bytes) {
        const uint64_t max = s->rotation->options().max_bytes, now = (*file)->bytes_written();
        step = std::min(step, std::max(now < max ? max - now : 0, kMinRotatingStepBytes));
      }
    }
    uint64_t read = 0;
    bool drained = false;
    if (!WriteSlicesIntoFile(sid, file->get(), step, status, &read, &drained)) return false;
    spent += read;
    bool rotate;
    {
      ServiceLock lock(this);
      TracingSession* s = FindSessionLocked(sid);
      if (!s) return false;
      rotate = status->ok() && RotationDueLocked(*s);
    }
    if (rotate) {
      RotateFile(sid);
      ServiceLock lock(this);
      TracingSession* s = FindSessionLocked(sid);
      if (!s || !s->file) return false;
      *file = s->file;
    }
    // Drained, failed, or nothing readable (held back: a gap, a trigger).
    if (!status->ok() || drained || (read == 0 && !rotate)) break;
  }
  return true;
}

void TracingService::PeriodicWriteIntoFile(TracingSessionId sid, bool reschedule) {
  std::shared_ptr<TraceFileWriter> file;
  uint32_t period = kDefaultFileWritePeriodMs;
  uint64_t limit = 0;
  bool rotating = false;
  {
    ServiceLock lock(this);
    TracingSession* s = FindSessionLocked(sid);
    // kDisabled: FinalizeSession wrote the rest.
    if (!s || !s->file || s->state == SessionState::kDisabled) return;
    file = s->file;
    if (s->config.file_write_period_ms())
      period = std::max(s->config.file_write_period_ms(), kMinFileWritePeriodMs);
    // At most a buffers' worth per period, so a producer that writes as fast
    // as we read cannot keep the service thread here.
    for (BufferId b : s->buffers) limit += buffers_[b].size_bytes;
    rotating = s->rotation != nullptr;
  }
  Status st;
  const uint64_t bytes_before = file->bytes_written();
  const std::shared_ptr<TraceFileWriter> first_file = file;
  if (rotating) {
    // A time cut due with nothing to write is made all the same.
    if (!WriteSlicesRotating(sid, &file, limit, &st)) return;
  } else if (!WriteSlicesIntoFile(sid, file.get(), limit, &st)) {
    return;
  }
  ServiceLock lock(this);
  TracingSession* s = FindSessionLocked(sid);
  if (!s) return;
  s->file_bytes = file->bytes_written();
  if (!st.ok()) {
    Log("sluiced: session " + std::to_string(sid) + " stopping: " + st.message());
    DisableTracingLocked(s, st.message());
  } else if (file->full()) {
    Log("sluiced: session " + std::to_string(sid) + " reached max_file_size_bytes; stopping");
    DisableTracingLocked(s, "");
  }
  // A lap still half full after the write: if this write wrote, the
  // producers refilled it meanwhile, and no commit may come to post the next
  // early write (they may have finished), so post it now. If it wrote
  // nothing, the reads hold that data back (a gap, a trigger): no early write
  // again before the next regular one.
  const bool wrote = file != first_file || file->bytes_written() != bytes_before;
  s->early_write_posted = s->state == SessionState::kStarted && AnyLapHalfFullLocked(*s);
  if (s->early_write_posted && wrote) PostTask([this, sid] { PeriodicWriteIntoFile(sid, false); });
  if (reschedule && s->state != SessionState::kDisabled)
    PostDelayedTask([this, sid] { PeriodicWriteIntoFile(sid); }, period);
}

// ---- Rotation -------------------------------------------------------------------

bool TracingService::RotationDueLocked(const TracingSession& s) const {
  if (!s.rotation || s.rotation_failed || !s.file || s.file->failed() || s.trailer_emitted ||
      s.state == SessionState::kConfigured)
    return false;
  // Not before the state the next file needs at its head was read: a
  // backlog read at the start may hold data of the ftrace CPUs before the
  // process tree and system info (a read pass goes sequence by sequence).
  for (const auto& ds : s.config.data_sources()) {
    const std::string& name = ds.config().name();
    if ((name == "linux.system_info" && s.carried_system_info.empty()) ||
        (name == "linux.process_stats" && s.carried_process_trees.empty()))
      return false;
  }
  const FileRotationOptions& o = s.rotation->options();
  if (o.max_bytes && s.file->bytes_written() >= o.max_bytes) return true;
  // By time only while recording: at the end the rest goes into the file
  // there is.
  return s.state == SessionState::kStarted && o.max_ms &&
         BootTimeNs() - s.file_started_ns >= uint64_t{o.max_ms} * 1000000;
}

void TracingService::ScheduleTimedRotationLocked(TracingSession* s) {
  const uint32_t max_ms = s->rotation->options().max_ms;
  if (!max_ms) return;
  const uint64_t started = s->file_started_ns;
  const TracingSessionId sid = s->id;
  // At the time: flush, so that the file holds what the producers had until
  // then, and write (PeriodicWriteIntoFile cuts once it finds the file due).
  PostDelayedTask(
      [this, sid, started] {
        ServiceLock lock(this);
        TracingSession* session = FindSessionLocked(sid);
        if (!session || session->state != SessionState::kStarted || session->file_started_ns != started) return;
        ClearIncrementalStateLocked(session);
        session->cut_state_requested = true;
        FlushLocked(session, session->flush_timeout_ms, [this, sid](bool) { PeriodicWriteIntoFile(sid, false); });
      },
      max_ms);
}

void TracingService::RotateFile(TracingSessionId sid) {
  std::shared_ptr<TraceFileWriter> finished;
  std::string finished_name;
  std::vector<std::string> trailer;
  {
    ServiceLock lock(this);
    TracingSession* s = FindSessionLocked(sid);
    if (!s || !RotationDueLocked(*s)) return;
    std::string next_name;
    StatusOr<ScopedFd> next = s->rotation->OpenNext(&next_name);
    if (!next.ok()) {
      // The session ends; what it wrote stays valid (the end's trailer goes
      // into the file it has).
      // No more cuts: the rest goes into the file it has, and the session
      // ends with the error (it may be ending already: the error stays).
      s->rotation_failed = true;
      Log("sluiced: session " + std::to_string(sid) + " stopping: " + next.status().message());
      if (s->state == SessionState::kStarted) DisableTracingLocked(s, next.status().message());
      else if (s->disable_error.empty()) s->disable_error = next.status().message();
      return;
    }
    // The kernel's counters as last read end this file and begin the next.
    const uint64_t cut_ns = BootTimeNs();
    std::vector<std::string> next_starts;
    for (const auto& [seq, stats] : s->newest_ftrace_stats) {
      std::string end = FtraceStatsAs(stats, perfetto::protos::FtraceStats::END_OF_TRACE, cut_ns);
      std::string start = FtraceStatsAs(stats, perfetto::protos::FtraceStats::START_OF_TRACE, cut_ns);
      if (!end.empty()) trailer.push_back(std::move(end));
      if (!start.empty()) next_starts.push_back(std::move(start));
    }
    if (!s->config.builtin_data_sources().disable_clock_snapshotting()) trailer.push_back(MakeClockSnapshotPacket());
    perfetto::protos::TraceStats now = GetTraceStatsLocked(s);
    perfetto::protos::TraceStats file_stats = FileTraceStatsLocked(s);
    for (const auto& m : file_stats.sluice_service_stats().relay_machines())
      trailer.push_back(MakeMachineTraceStatsPacket(m));
    trailer.push_back(MakeTraceStatsPacket(file_stats));
    finished = std::move(s->file);
    finished_name = std::move(s->file_name);
    s->file = std::make_shared<TraceFileWriter>(std::move(*next), 0, TraceCompressionOf(s->config));
    s->file_name = std::move(next_name);
    s->file_started_ns = BootTimeNs();
    s->stats_at_file_start = std::make_shared<perfetto::protos::TraceStats>(std::move(now));
    // The next file starts as a trace does: config, descriptors, clocks,
    // then the producers' state written again (process tree, system info).
    s->start_clock_snapshot = MakeClockSnapshotPacket();
    s->header_emitted = false;
    s->machine_sync_written.clear();  // Each file has the relayed machines' clocks.
    s->carried_ftrace_starts = std::move(next_starts);
    // A time cut asked before its flush (ScheduleTimedRotationLocked), so
    // that what the producers wrote again is in the file it closes.
    if (!std::exchange(s->cut_state_requested, false)) ClearIncrementalStateLocked(s);
    ScheduleTimedRotationLocked(s);
  }
  Status st = finished->WritePackets(trailer, /*trailer=*/true);
  ServiceLock lock(this);
  TracingSession* s = FindSessionLocked(sid);
  if (!s) return;
  if (!st.ok()) Log("sluiced: session " + std::to_string(sid) + ": " + finished_name + ": " + st.message());
  finished.reset();  // Closes it.
  FinishRotatedFileLocked(s, finished_name);
}

void TracingService::FinishRotatedFileLocked(TracingSession* s, const std::string& recording_name) {
  StatusOr<std::string> name = s->rotation->Finish(recording_name);
  if (!name.ok()) {
    Log("sluiced: session " + std::to_string(s->id) + ": " + name.status().message());
    return;
  }
  if (!s->rotation->keep_error().empty())
    Log("sluiced: session " + std::to_string(s->id) + ": " + s->rotation->keep_error());
  if (s->consumer == 0) return;
  PostConsumerCallLocked(s->consumer, [finished = *name](Consumer* observer) { observer->OnTraceFileFinished(finished); });
}

void TracingService::CarryStatePacketLocked(TracingSession* s, uint32_t field, uint32_t sequence_id,
                                            uint32_t machine_id, const std::string& packet) {
  if (field == kFtraceStatsField) {
    s->newest_ftrace_stats[sequence_id] = packet;
  } else if (field == kSystemInfoField) {
    s->carried_system_info[machine_id] = packet;
  } else if (field == kCpuInfoField) {
    s->carried_cpu_info[machine_id] = packet;
  } else {
    s->carried_process_trees.push_back(packet);
    s->carried_process_tree_bytes += packet.size();
    // An eighth of a file at most (a small file is not mostly its head),
    // 64 KiB to 1 MiB: a few rescans of a busy server's processes.
    const uint64_t max_bytes = s->rotation->options().max_bytes;
    const size_t bound = max_bytes ? static_cast<size_t>(std::clamp<uint64_t>(max_bytes / 8, 64u << 10, 1u << 20))
                                   : size_t{1} << 20;
    while (s->carried_process_tree_bytes > bound && s->carried_process_trees.size() > 1) {
      s->carried_process_tree_bytes -= s->carried_process_trees.front().size();
      s->carried_process_trees.pop_front();
    }
  }
}

perfetto::protos::TraceStats TracingService::FileTraceStatsLocked(TracingSession* s) {
  perfetto::protos::TraceStats now = GetTraceStatsLocked(s);
  if (!s->stats_at_file_start) return now;
  return TraceStatsSince(*s->stats_at_file_start, now);
}

// ---- Stats ----------------------------------------------------------------------

StatusOr<perfetto::protos::TraceStats> TracingService::GetTraceStats(ConsumerId consumer) {
  ServiceLock lock(this);
  TracingSession* s = SessionForConsumerLocked(consumer);
  if (!s) return Status::Error("no tracing session: call EnableTracing first");
  return GetTraceStatsLocked(s);
}

perfetto::protos::TraceStats TracingService::GetTraceStatsLocked(TracingSession* s) {
  if (s->buffers_released && s->final_stats) return *s->final_stats;
  perfetto::protos::TraceStats st;
  for (BufferId b : s->buffers) {
    const BufferEntry& e = buffers_[b];
    const TraceBufferStats& t = e.buffer->stats();
    auto* bs = st.add_buffer_stats();
    bs->set_buffer_size(t.buffer_size);
    bs->set_bytes_written(t.bytes_written);
    bs->set_bytes_overwritten(t.bytes_overwritten);
    bs->set_bytes_read(t.bytes_read);
    bs->set_padding_bytes_written(t.padding_bytes_written);
    bs->set_padding_bytes_cleared(t.padding_bytes_cleared);
    bs->set_chunks_written(t.chunks_written);
    bs->set_chunks_rewritten(t.chunks_rewritten);
    bs->set_chunks_overwritten(t.chunks_overwritten);
    bs->set_chunks_discarded(t.chunks_discarded);
    bs->set_chunks_read(t.chunks_read);
    bs->set_chunks_committed_out_of_order(t.chunks_committed_out_of_order);
    bs->set_write_wrap_count(t.write_wrap_count);
    bs->set_patches_succeeded(t.patches_succeeded);
    bs->set_patches_failed(t.patches_failed);
    bs->set_readaheads_succeeded(t.readaheads_succeeded);
    bs->set_readaheads_failed(t.readaheads_failed);
    bs->set_abi_violations(t.abi_violations + e.extra_abi_violations);
    bs->set_trace_writer_packet_loss(t.trace_writer_packet_loss);
  }
  uint64_t registered = 0;
  for (auto& [pid, p] : producers_) registered += p->data_sources.size();
  st.set_producers_connected(static_cast<uint32_t>(producers_.size()));
  st.set_producers_seen(stats_.producers_seen);
  st.set_data_sources_registered(static_cast<uint32_t>(registered));
  st.set_data_sources_seen(data_sources_seen_);
  st.set_tracing_sessions(static_cast<uint32_t>(sessions_.size()));
  st.set_total_buffers(static_cast<uint32_t>(buffers_.size()));
  st.set_chunks_discarded(stats_.chunks_discarded);
  st.set_patches_discarded(stats_.patches_discarded);
  st.set_invalid_packets(s->invalid_packets);
  st.set_flushes_requested(s->flushes_requested);
  st.set_flushes_succeeded(s->flushes_succeeded);
  st.set_flushes_failed(s->flushes_failed);
  if (s->final_flush_outcome)
    st.set_final_flush_outcome(
        static_cast<perfetto::protos::TraceStats::FinalFlushOutcome>(s->final_flush_outcome));
  auto* faults = st.mutable_sluice_service_stats();
  faults->set_producers_disconnected(s->producers_disconnected);
  faults->set_producers_disconnected_not_reading(s->producers_disconnected_not_reading);
  faults->set_producers_disconnected_for_faults(s->producers_disconnected_for_faults);
  faults->set_chunks_lost_being_written(s->chunks_lost_being_written);
  faults->set_chunks_lost_writer_unknown(s->chunks_lost_writer_unknown);
  faults->set_chunks_scraped(s->chunks_scraped);
  if (s->cloned_from != 0) faults->set_snapshot_of_session(s->cloned_from);
  // Every machine relayed while the session lived, in machine_id order (so
  // TraceStatsSince pairs a file's start with its end entry by entry).
  for (const auto& [id, m] : machines_)
    if (m.links) SessionMachineLocked(s, id);
  for (const auto& [id, m] : s->machines) {
    sluice::protos::RelayMachineStats* out = faults->add_relay_machines();
    *out = m;
    auto it = machines_.find(id);
    if (it != machines_.end() && it->second.sync_generation) {
      out->set_clock_offset_ns(it->second.clock_offset_ns);
      out->set_clock_error_ns(it->second.clock_error_ns);
    }
  }
  return st;
}

ServiceState TracingService::QueryServiceState() {
  ServiceLock lock(this);
  ServiceState st;
  for (auto& [pid, p] : producers_) {
    st.producers.push_back(ServiceState::ProducerInfo{p->id, p->name, static_cast<int32_t>(p->pid),
                                                  static_cast<int32_t>(p->uid)});
    for (const DataSourceDescriptor& d : p->data_sources)
      st.data_sources.push_back(ServiceState::DataSource{p->id, d.name});
  }
  for (auto& [sid, s] : sessions_) {
    st.num_sessions++;
    if (s->state == SessionState::kStarted) st.num_sessions_started++;
  }
  st.service_version = kServiceVersion;
  return st;
}

ServiceStats TracingService::GetServiceStats() {
  ServiceLock lock(this);
  ServiceStats s = stats_;
  s.producers_connected = producers_.size();
  s.consumers_connected = consumers_.size();
  return s;
}

void TracingService::CountDroppedIpcConnection() {
  ServiceLock lock(this);
  stats_.ipc_connections_dropped++;
}

}  // namespace sluice
