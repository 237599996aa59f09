// TracingService: session control beyond one consumer's life. Detach,
// Attach, ListSessions and CloneSession (ConsumerEndpoint in
// service_endpoints.h has the contract, docs/SERVICE.md "Detach, attach and
// clone" the picture), and what happens to a session whose consumer goes
// away without detaching.
//
//   consumer ─EnableTracing(key?)─▶ session ─Detach(key)─▶ detached: runs on,
//       the service will write its file ─Attach(key)─▶ a new consumer's, as
//       if it had created it (it may DisableTracing, wait, FreeBuffers);
//       the service still writes the file (the new consumer waits for the
//       end and takes the file: one writer, whoever comes and goes)
//   session ends while detached ─▶ file written, buffers freed, the rest
//       (outcome, paths, final stats) kept until someone attaches
//   consumer gone, not detached ─▶ orphaned: stopped as DisableTracing
//       stops it, file written (trailer and all), then freed
//   CloneSession(key) ─▶ flush the source's producers ─▶ copy its buffers
//       (TraceBuffer::CloneReadOnly) into a new ended session of the
//       caller's, read with ReadBuffers; the source goes on untouched
#include <algorithm>

#include "perfetto/common/trace_stats.pb.h"
#include "service/service_packets.h"
#include "service/trace_file_writer.h"
#include "service/tracing_service.h"
#include "shm/base/clock.h"
#include "shm/base/string_util.h"

namespace sluice {
namespace {

constexpr size_t kMaxKeyLength = 64;

bool IsKeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.' || c == ':' || c == '@' || c == '+' || c == '-';
}

}  // namespace

// ---- Keys and owners ------------------------------------------------------------

TracingService::TracingSession* TracingService::FindSessionByKeyLocked(const std::string& key) {
  if (key.empty()) return nullptr;
  // "#<id>": the session with that id (what `sluice sessions` lists, and
  // upstream's `perfetto --clone ID` names); no key starts with '#'.
  if (key[0] == '#') {
    uint64_t id = 0;
    if (!ParseU64(std::string_view(key).substr(1), &id)) return nullptr;
    auto it = sessions_.find(id);
    return it != sessions_.end() && it->second->cloned_from == 0 ? it->second.get() : nullptr;
  }
  for (auto& [id, s] : sessions_)
    if (s->cloned_from == 0 && s->key == key) return s.get();
  // unique_session_name names a session while it runs (as upstream).
  for (auto& [id, s] : sessions_)
    if (s->cloned_from == 0 && s->state != SessionState::kDisabled &&
        s->config.unique_session_name() == key)
      return s.get();
  return nullptr;
}

Status TracingService::CheckNewKeyLocked(const std::string& key, const TracingSession* except) {
  if (key.empty() || key.size() > kMaxKeyLength || key[0] == '-' ||
      !std::all_of(key.begin(), key.end(), IsKeyChar))
    return Status::Error("bad session key '" + key + "': use 1 to " +
                         std::to_string(kMaxKeyLength) +
                         " letters, digits or _.:@+- (not starting with -)");
  const TracingSession* other = FindSessionByKeyLocked(key);
  if (other && other != except)
    return Status::Error("the session key '" + key + "' is in use (session " +
                         std::to_string(other->id) + ", uid " + std::to_string(other->owner_uid) +
                         (other->state == SessionState::kDisabled ? ", ended; attach to collect it"
                                                                  : "") +
                         "): pick another key");
  return Status::Ok();
}

Status TracingService::CheckOwnerLocked(ConsumerId consumer, const TracingSession* s,
                                        const std::string& what) {
  const uid_t uid = consumer_peers_[consumer].uid;
  if (uid == 0 || uid == s->owner_uid) return Status::Ok();
  return Status::Error("session '" + s->key + "' belongs to uid " + std::to_string(s->owner_uid) +
                       "; only that user or root may " + what + " it");
}

// ---- Detach and attach --------------------------------------------------------

Status TracingService::Detach(ConsumerId consumer, const std::string& key) {
  ServiceLock lock(this);
  TracingSession* s = SessionForConsumerLocked(consumer);
  if (!s) return Status::Error("no tracing session to detach: call EnableTracing first");
  if (s->cloned_from != 0)
    return Status::Error("a clone cannot be detached: read it (ReadBuffers) and free it");
  const std::string& name = key.empty() ? s->key : key;
  if (name.empty()) return Status::Error("detaching needs a key to attach with later");
  if (!s->key.empty() && name != s->key)
    return Status::Error("the session's key is '" + s->key + "', not '" + name + "'");
  SLUICE_RETURN_IF_ERROR(CheckNewKeyLocked(name, s));
  if (s->state == SessionState::kStopping || s->state == SessionState::kDisabled)
    return Status::Error("the session is " +
                         std::string(s->state == SessionState::kStopping ? "stopping" : "over") +
                         "; only a running session can be detached");
  if (!s->file && (!s->end_output.valid() || s->header_emitted))
    return Status::Error(s->header_emitted
                             ? "this consumer has read from the session already: the rest "
                               "cannot go into one file; read it to the end instead"
                             : "sluiced has no file to write this session into: give the "
                               "output file's fd to EnableTracing, or use write_into_file");
  s->key = name;
  s->consumer = 0;
  s->detached = true;
  s->service_writes_file = !s->file;
  Log("sluiced: session " + std::to_string(s->id) + " detached as '" + name + "' (uid " +
      std::to_string(s->owner_uid) + ")");
  return Status::Ok();
}

StatusOr<AttachedSession> TracingService::Attach(ConsumerId consumer, const std::string& key) {
  ServiceLock lock(this);
  if (!consumers_.count(consumer)) return Status::Error("unknown consumer");
  if (SessionForConsumerLocked(consumer))
    return Status::Error("this consumer has a tracing session already; FreeBuffers first");
  TracingSession* s = FindSessionByKeyLocked(key);
  if (!s) return Status::Error("no session '" + key + "' (sluice sessions lists them)");
  SLUICE_RETURN_IF_ERROR(CheckOwnerLocked(consumer, s, "attach to"));
  if (!s->detached) {
    if (s->consumer == 0)  // Orphaned: being stopped and written.
      return Status::Error("session '" + key + "' lost its consumer and is being stopped");
    return Status::Error("session '" + key + "' is not detached: its consumer (pid " +
                         std::to_string(consumer_peers_[s->consumer].pid) +
                         ") has it; attach once it detached");
  }
  s->consumer = consumer;
  s->detached = false;
  // Ended while detached, its file complete: say so now. (One still being
  // written is said when the writing is done.)
  if (s->state == SessionState::kDisabled && !s->file) NotifyConsumerLocked(s, s->disable_error);
  Log("sluiced: session " + std::to_string(s->id) + " '" + key + "' attached by pid " +
      std::to_string(consumer_peers_[consumer].pid));
  AttachedSession attached;
  attached.info = DescribeSessionLocked(s);
  attached.config = s->config;
  return attached;
}

void TracingService::OrphanSessionLocked(TracingSession* s) {
  s->consumer = 0;
  s->orphaned = true;
  if (s->cloned_from != 0) return FreeSessionLocked(s);
  if (s->state != SessionState::kDisabled) {
    // FinalizeSession writes the file (if the service has one) and settles.
    Log("sluiced: the consumer of session " + std::to_string(s->id) +
        " went away without detaching; stopping the session" +
        (s->file || s->end_output.valid() ? " and finishing its file" : ""));
    DisableTracingLocked(s, "");
    return;
  }
  if (s->file) return;  // Being written: settled after.
  if (s->end_output.valid() && !s->header_emitted) {
    // Ended, but its consumer went away before reading any of it.
    auto file = std::make_shared<TraceFileWriter>(std::move(s->end_output),
                                                  s->config.max_file_size_bytes(),
                                                  TraceCompressionOf(s->config));
    s->file = file;
    PostTask([this, sid = s->id, file] { WriteEndedSession(sid, file); });
    return;
  }
  FreeSessionLocked(s);
}

void TracingService::SettleEndedSessionLocked(TracingSession* s) {
  if (!s->detached) return FreeSessionLocked(s);
  // Detached: the file is written; keep what Attach reports, not the memory.
  s->final_stats = std::make_shared<perfetto::protos::TraceStats>(GetTraceStatsLocked(s));
  FreeBuffersLocked(s);
  s->buffers_released = true;
  Log("sluiced: detached session " + std::to_string(s->id) + " '" + s->key + "' ended" +
      (s->disable_error.empty() ? "" : " (" + s->disable_error + ")") +
      "; its file is written; attach to collect it");
}

// ---- Listing --------------------------------------------------------------------

SessionInfo TracingService::DescribeSessionLocked(const TracingSession* s) {
  SessionInfo info;
  info.id = s->id;
  info.key = s->key;
  info.unique_session_name = s->config.unique_session_name();
  info.owner_uid = s->owner_uid;
  if (s->consumer != 0) info.consumer_pid = consumer_peers_[s->consumer].pid;
  switch (s->state) {
    case SessionState::kConfigured: info.state = SessionInfo::State::kConfigured; break;
    case SessionState::kStarted: info.state = SessionInfo::State::kStarted; break;
    case SessionState::kStopping: info.state = SessionInfo::State::kStopping; break;
    case SessionState::kDisabled: info.state = SessionInfo::State::kEnded; break;
  }
  info.detached = s->detached;
  info.cloned_from = s->cloned_from;
  const uint64_t now_ms = BootTimeNs() / 1000000;
  info.age_ms = now_ms > s->created_ms ? now_ms - s->created_ms : 0;
  info.duration_ms = s->config.duration_ms();
  info.write_into_file = s->config.write_into_file();
  info.triggers = DescribeTriggersLocked(s);
  for (const auto& ds : s->config.data_sources()) {
    const std::string& name = ds.config().name();
    if (std::find(info.data_sources.begin(), info.data_sources.end(), name) == info.data_sources.end())
      info.data_sources.push_back(name);
  }
  for (BufferId b : s->buffers) {
    auto it = buffers_.find(b);
    if (it == buffers_.end()) continue;
    const TraceBufferStats& t = it->second.buffer->stats();
    SessionInfo::Buffer buffer;
    buffer.size_bytes = it->second.size_bytes;
    buffer.discard = it->second.buffer->fill_policy() == TraceBuffer::FillPolicy::kDiscard;
    const uint64_t gone = t.bytes_read + t.bytes_overwritten;
    buffer.bytes_held = std::min(t.bytes_written > gone ? t.bytes_written - gone : 0, t.buffer_size);
    info.buffers.push_back(buffer);
    info.chunks_overwritten += t.chunks_overwritten;
    info.chunks_discarded += t.chunks_discarded;
    info.patches_failed += t.patches_failed;
    info.abi_violations += t.abi_violations + it->second.extra_abi_violations;
    info.trace_writer_packet_loss += t.trace_writer_packet_loss;
  }
  if (s->buffers_released && s->final_stats) {
    // The buffers are gone; their last figures are in the final stats.
    for (const auto& b : s->final_stats->buffer_stats()) {
      SessionInfo::Buffer buffer;
      buffer.size_bytes = b.buffer_size();
      info.buffers.push_back(buffer);
      info.chunks_overwritten += b.chunks_overwritten();
      info.chunks_discarded += b.chunks_discarded();
      info.patches_failed += b.patches_failed();
      info.abi_violations += b.abi_violations();
      info.trace_writer_packet_loss += b.trace_writer_packet_loss();
    }
    for (int i = 0; i < s->config.buffers_size() && i < static_cast<int>(info.buffers.size()); i++)
      info.buffers[i].discard = s->config.buffers(i).fill_policy() ==
                                perfetto::protos::TraceConfig::BufferConfig::DISCARD;
  }
  info.flushes_failed = s->flushes_failed;
  info.chunks_lost = s->chunks_lost_being_written + s->chunks_lost_writer_unknown;
  info.file_bytes = s->file_bytes;
  info.output_path = s->output_path;
  info.output_temp_path = s->output_temp_path;
  info.error = s->disable_error;
  return info;
}

SessionList TracingService::ListSessions(ConsumerId consumer) {
  ServiceLock lock(this);
  const uid_t uid = consumer_peers_.count(consumer) ? consumer_peers_[consumer].uid : 0;
  SessionList list;
  for (auto& [id, s] : sessions_) {
    if (uid != 0 && uid != s->owner_uid) {
      list.other_users++;
      continue;
    }
    list.sessions.push_back(DescribeSessionLocked(s.get()));
  }
  return list;
}

// ---- Clones ---------------------------------------------------------------------

void TracingService::CloneSession(ConsumerId consumer, const std::string& key,
                                  std::function<void(StatusOr<CloneResult>)> done) {
  ServiceLock lock(this);
  auto refuse = [&](Status why) {
    PostTask([done, why] { done(StatusOr<CloneResult>(why)); });
  };
  if (!consumers_.count(consumer)) return refuse(Status::Error("unknown consumer"));
  if (SessionForConsumerLocked(consumer))
    return refuse(Status::Error("this consumer has a tracing session already; FreeBuffers first"));
  TracingSession* s = FindSessionByKeyLocked(key);
  if (!s) return refuse(Status::Error("no session '" + key + "' (sluice sessions lists them)"));
  if (Status owner = CheckOwnerLocked(consumer, s, "clone"); !owner.ok()) return refuse(owner);
  if (s->state != SessionState::kStarted)
    return refuse(Status::Error(
        "session '" + key + "' is " +
        (s->state == SessionState::kConfigured ? "not started yet"
         : s->state == SessionState::kStopping ? "stopping"
                                               : "over (its file is written)") +
        "; only a running session can be cloned"));
  if (s->config.write_into_file())
    return refuse(Status::Error("session '" + key +
                                "' streams into its file (write_into_file): its buffers hold "
                                "only what was not written yet; copy the file instead"));
  for (int i = 0; i < s->config.buffers_size(); i++)
    if (s->config.buffers(i).fill_policy() == perfetto::protos::TraceConfig::BufferConfig::DISCARD)
      return refuse(Status::Error(
          "session '" + key + "' has a DISCARD buffer (buffers[" + std::to_string(i) +
          "]), which keeps the oldest data and takes nothing once full; clones are "
          "snapshots of RING_BUFFER sessions: stop it to get its data"));
  uint64_t bytes = 0;
  for (BufferId b : s->buffers) bytes += buffers_[b].size_bytes;
  if (total_buffer_bytes_ + bytes > options_.max_total_buffer_bytes)
    return refuse(Status::Error(
        "a clone of session '" + key + "' needs " + std::to_string(bytes >> 10) +
        " KiB of buffers; the service allows " +
        std::to_string((options_.max_total_buffer_bytes - total_buffer_bytes_) >> 10) +
        " KiB more (sluiced --max-buffers, or free other sessions)"));
  // Flush first, so the copy holds what the producers wrote until now (as
  // upstream's CloneSession). A flush that times out still gives a clone:
  // its TraceStats count the failure, and the answer says so.
  const TracingSessionId source = s->id;
  struct Shape {
    size_t size;
    TraceBuffer::FillPolicy policy;
    size_t used;  // Now; what the flush adds is faulted in under the mutex.
  };
  std::vector<Shape> shapes;
  for (BufferId b : s->buffers) {
    const TraceBuffer& buffer = *buffers_[b].buffer;
    shapes.push_back(Shape{buffer.size(), buffer.fill_policy(), buffer.used_size()});
  }
  FlushLocked(s, s->flush_timeout_ms, [this, consumer, source, shapes, done](bool flushed) {
    // The copies' memory is mapped and faulted in here, without the mutex:
    // for a fresh 64 MiB ring that is most of the cost (docs/SERVICE.md).
    std::vector<std::unique_ptr<TraceBuffer>> rings;
    for (const Shape& shape : shapes) {
      rings.push_back(TraceBuffer::Create(shape.size, shape.policy));
      if (rings.back()) rings.back()->Prefault(shape.used);
    }
    StatusOr<CloneResult> result = Status::Error("");
    {
      ServiceLock lock(this);
      result = CloneLocked(consumer, source, flushed, &rings);
    }
    rings.clear();  // What was not used (a refusal), unmapped without the mutex.
    done(std::move(result));
  });
}

StatusOr<CloneResult> TracingService::CloneLocked(ConsumerId consumer, TracingSessionId source,
                                                  bool flushed,
                                                  std::vector<std::unique_ptr<TraceBuffer>>* rings) {
  if (!consumers_.count(consumer)) return Status::Error("the consumer went away");
  if (SessionForConsumerLocked(consumer))
    return Status::Error("this consumer has a tracing session already; FreeBuffers first");
  TracingSession* src = FindSessionLocked(source);
  if (!src || src->state != SessionState::kStarted)
    return Status::Error("the session ended during the clone's flush; nothing was copied");
  auto clone = std::make_unique<TracingSession>();
  TracingSession* c = clone.get();
  c->id = ++last_session_id_;
  c->consumer = consumer;
  c->config = src->config;
  c->owner_uid = consumer_peers_[consumer].uid;
  c->created_ms = BootTimeNs() / 1000000;
  c->cloned_from = src->id;
  c->state = SessionState::kDisabled;
  c->flush_timeout_ms = src->flush_timeout_ms;
  // The same trusted sequence ids and pids as the source: the clone reads as
  // the first part of what the source's own file will hold.
  c->producers = src->producers;
  c->sequence_ids = src->sequence_ids;
  c->next_sequence_id = src->next_sequence_id;
  c->start_clock_snapshot = src->start_clock_snapshot;
  c->end_clock_snapshot = MakeClockSnapshotPacket();
  c->flushes_requested = src->flushes_requested;
  c->flushes_succeeded = src->flushes_succeeded;
  c->flushes_failed = src->flushes_failed;
  c->invalid_packets = src->invalid_packets;
  c->producers_disconnected = src->producers_disconnected;
  c->producers_disconnected_not_reading = src->producers_disconnected_not_reading;
  c->producers_disconnected_for_faults = src->producers_disconnected_for_faults;
  c->chunks_lost_being_written = src->chunks_lost_being_written;
  c->chunks_lost_writer_unknown = src->chunks_lost_writer_unknown;
  c->chunks_scraped = src->chunks_scraped;
  c->received_triggers = src->received_triggers;  // Its trace names them too.
  // The copy holds mu_: every producer's commits wait for it. Logged, with
  // its size, so its cost shows in sluiced's log.
  const uint64_t copy_start_ns = BootTimeNs();
  uint64_t copied_bytes = 0;
  for (size_t i = 0; i < src->buffers.size(); i++) {
    const BufferEntry& from = buffers_[src->buffers[i]];
    std::unique_ptr<TraceBuffer> copy = i < rings->size() ? std::move((*rings)[i]) : nullptr;
    if (!copy || !from.buffer->CloneInto(copy.get()) ||
        total_buffer_bytes_ + from.size_bytes > options_.max_total_buffer_bytes) {
      FreeBuffersLocked(c);
      return Status::Error("cannot allocate " + std::to_string(from.size_bytes >> 10) +
                           " KiB for the clone's buffer (out of memory, or the service's buffer "
                           "limit)");
    }
    const BufferId id = next_buffer_id_++;
    BufferEntry& entry = buffers_[id];
    entry.buffer = std::move(copy);
    entry.size_bytes = from.size_bytes;
    entry.session = c->id;
    entry.extra_abi_violations = from.extra_abi_violations;
    total_buffer_bytes_ += from.size_bytes;
    c->buffers.push_back(id);
    copied_bytes += from.size_bytes;
  }
  const uint64_t copy_us = (BootTimeNs() - copy_start_ns) / 1000;
  sessions_[c->id] = std::move(clone);
  Log("sluiced: session " + std::to_string(source) + " cloned into session " +
      std::to_string(c->id) + " (" + std::to_string(copied_bytes >> 10) + " KiB of buffers copied in " +
      std::to_string(copy_us / 1000) + "." + std::to_string(copy_us / 100 % 10) + " ms)" +
      (flushed ? "" : "; the flush timed out"));
  CloneResult result;
  result.source_id = source;
  result.flushed = flushed;
  result.compression = TraceCompressionOf(c->config);
  return result;
}

}  // namespace sluice
