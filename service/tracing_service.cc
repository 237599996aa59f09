// TracingService: construction, tasks, producers and the commit path.
// Sessions are in tracing_service_session.cc, the in-process connection
// objects in tracing_service_in_process.cc.
#include "service/tracing_service.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "service/trace_file_writer.h"
#include "shm/smb_chunk_reader.h"

namespace sluice {

TracingService::TracingService(EventLoop* loop, TracingServiceOptions options)
    : loop_(loop),
      options_(std::move(options)),
      lifetime_(std::make_shared<Lifetime>()),
      scratch_(new uint8_t[kMaxPageSize]) {
  deferred_commits_.Reserve();
  applying_commits_.Reserve();
}

TracingService::~TracingService() {
  {
    // Waits for a running task; later tasks see !alive and do nothing.
    std::lock_guard<std::mutex> lock(lifetime_->mu);
    lifetime_->alive = false;
  }
  ServiceLock lock(this);
  if (!producers_.empty() || !consumers_.empty())
    Log("sluiced: service destroyed with " + std::to_string(producers_.size()) +
        " producers and " + std::to_string(consumers_.size()) +
        " consumers still connected (destroy connections first)");
  sessions_.clear();
  buffers_.clear();
  producers_.clear();
}

void TracingService::Log(const std::string& line) const {
  if (options_.log) options_.log(line);
}

// ---- Tasks ------------------------------------------------------------------

void TracingService::PostTask(std::function<void()> task) {
  loop_->PostTask([life = lifetime_, task = std::move(task)] {
    std::lock_guard<std::mutex> lock(life->mu);
    if (life->alive) task();
  });
}

uint64_t TracingService::PostDelayedTask(std::function<void()> task, uint32_t delay_ms) {
  return loop_->PostDelayedTask(
      [life = lifetime_, task = std::move(task)] {
        std::lock_guard<std::mutex> lock(life->mu);
        if (life->alive) task();
      },
      delay_ms);
}

void TracingService::CancelDelayedTask(uint64_t timer_id) { loop_->CancelDelayedTask(timer_id); }

void TracingService::PostProducerCallLocked(ProducerId producer,
                                            std::function<void(Producer*)> call) {
  PostTask([this, producer, call = std::move(call)] {
    Producer* endpoint = nullptr;
    {
      ServiceLock lock(this);
      ConnectedProducer* p = FindProducerLocked(producer);
      if (!p || p->kicked || p->not_reading) return;
      endpoint = p->endpoint;
    }
    // The producer cannot go away while we call it: disconnecting off the
    // service thread waits for lifetime_->mu, which this task holds.
    call(endpoint);
  });
}

void TracingService::WaitForRunningTaskLocked(std::unique_lock<std::mutex>* lock) {
  if (loop_->RunsTasksOnCurrentThread()) return;
  lock->unlock();
  { std::lock_guard<std::mutex> barrier(lifetime_->mu); }
  lock->lock();
}

// ---- Producers --------------------------------------------------------------

StatusOr<std::unique_ptr<ProducerEndpoint>> TracingService::ConnectProducer(
    Producer* endpoint, const ProducerOptions& options) {
  PeerCredentials self;
  self.uid = getuid();
  self.gid = getgid();
  self.pid = getpid();
  int unused_fd = -1;
  return ConnectProducer(endpoint, options, self, &unused_fd);
}

ProducerId TracingService::AllocateProducerIdLocked() {
  // Ids are 16 bits (TraceBuffer keys). Skip ids still in use by a live
  // producer or by a session that holds data of a gone producer.
  for (uint32_t attempt = 0; attempt < 0x10000; attempt++) {
    ProducerId id = static_cast<ProducerId>(++last_producer_id_);
    if (id == 0) continue;
    if (producers_.count(id)) continue;
    bool in_session = false;
    for (auto& [sid, s] : sessions_) in_session |= s->producers.count(id) > 0;
    if (!in_session) return id;
  }
  return 0;
}

TracingService::ConnectedProducer* TracingService::FindProducerLocked(ProducerId id) {
  auto it = producers_.find(id);
  return it == producers_.end() ? nullptr : it->second.get();
}

void TracingService::DisconnectProducer(ProducerId id) {
  std::unique_lock<std::mutex> lock(mu_);
  ApplyDeferredCommitsLocked();  // Its last commits, before the scrape.
  ConnectedProducer* p = FindProducerLocked(id);
  if (!p) return;
  heap_release_events_.fetch_add(1, std::memory_order_relaxed);
  // What the producer completed but never committed goes into the trace
  // (not for a producer dropped for its faults: nothing of it is read).
  const uint64_t writer_unknown = p->kicked ? 0 : ScrapeProducerLocked(p, nullptr);
  // What it was still writing never will be, nor what it completed for a
  // writer it had not registered: counted as lost in each session it was
  // writing for.
  const uint64_t being_written = CountChunksBeingWrittenLocked(p);
  stats_.chunks_lost_being_written += being_written;
  stats_.chunks_lost_writer_unknown += writer_unknown;
  for (TracingSession* s : LiveSessionsOfLocked(id)) {
    s->producers_disconnected++;
    s->chunks_lost_being_written += being_written;
    s->chunks_lost_writer_unknown += writer_unknown;
  }
  for (auto& [sid, s] : sessions_) {
    if (!s->producers.count(id)) continue;
    for (BufferId b : s->buffers) {
      auto it = buffers_.find(b);
      if (it != buffers_.end()) it->second.buffer->MarkProducerGone(id);
    }
    for (auto& [iid, inst] : s->instances)
      if (inst.producer == id) MarkInstanceStoppedLocked(s.get(), iid);
    // Stopped for good: nothing looks at them again.
    std::erase_if(s->instances, [id](const auto& entry) { return entry.second.producer == id; });
  }
  std::vector<FlushRequestId> flushes;
  for (auto& [fid, f] : pending_flushes_)
    if (f.pending.count(id)) flushes.push_back(fid);
  for (FlushRequestId fid : flushes) OnFlushAckLocked(id, fid);

  Log("sluiced: producer " + std::to_string(id) + " '" + p->name + "' (pid " +
      std::to_string(p->pid) + ", uid " + std::to_string(p->uid) + ") disconnected" +
      (p->kicked ? " after " + std::to_string(p->violations) + " violations" : "") +
      (being_written ? "; " + std::to_string(being_written) + " chunks it was writing are lost"
                     : ""));
  std::unique_ptr<ConnectedProducer> gone = std::move(producers_[id]);
  producers_.erase(id);
  stats_.producers_connected = producers_.size();
  for (auto& [sid, s] : sessions_)
    if (s->producers.count(id)) ForgetGoneProducersLocked(s.get());
  // A call into this producer may be running on the service thread: wait for
  // it before the endpoint (owned by the caller) and the SMB go away.
  WaitForRunningTaskLocked(&lock);
  lock.unlock();
  gone.reset();
}

void TracingService::ViolationLocked(ConnectedProducer* p, BufferEntry* buffer) {
  p->violations++;
  stats_.abi_violations++;
  if (buffer) buffer->extra_abi_violations++;
  if (p->kicked || p->violations < options_.abi_violations_before_disconnect) return;
  p->kicked = true;
  stats_.producers_disconnected_for_faults++;
  for (TracingSession* s : LiveSessionsOfLocked(p->id)) s->producers_disconnected_for_faults++;
  std::string reason = "producer sent " + std::to_string(p->violations) +
                       " invalid chunks/messages; disconnected (fix the producer)";
  Producer* endpoint = p->endpoint;
  ProducerId id = p->id;
  // Not PostProducerCallLocked: that skips kicked producers.
  PostTask([this, id, endpoint, reason] {
    {
      ServiceLock lock(this);
      if (!FindProducerLocked(id)) return;
    }
    endpoint->OnDisconnect(reason);
  });
}

TracingService::BufferEntry* TracingService::WritableBufferLocked(ConnectedProducer* p, BufferId target,
                                                                  bool* expired) {
  *expired = false;
  if (p->allowed_buffers.count(target)) {
    auto it = buffers_.find(target);
    if (it != buffers_.end()) return &it->second;
  }
  // A buffer id that existed once and is gone now: a late commit from a
  // session that ended. Not the producer's fault.
  if (target != 0 && target < next_buffer_id_ && !buffers_.count(target)) *expired = true;
  return nullptr;
}

void TracingService::MoveChunkLocked(ConnectedProducer* p, uint32_t page, uint32_t chunk, BufferId target,
                                     int memfd) {
  ChunkCopy copy;
  ChunkReadResult r = ReadChunkUntrusted(&p->abi, page, chunk, scratch_.get(), kMaxPageSize, &copy, memfd);
  if (memfd >= 0 && r != ChunkReadResult::kNotComplete && r != ChunkReadResult::kBadIndex)
    stats_.chunks_read_by_pread++;
  if (r == ChunkReadResult::kNotComplete) {
    // Benign when the service scraped the chunk already (disconnect or end
    // of session) and the producer's commit arrives afterwards.
    stats_.chunks_not_complete++;
    return;
  }
  StoreChunkCopyLocked(p, r, copy, target);
}

void TracingService::CommitCopiedChunks(ProducerId id, const std::vector<CopiedChunk>& chunks,
                                        const std::vector<LostChunks>& lost, const CommitDataRequest& request) {
  // The relay's link runs on the service thread: it waits for mu_ as the
  // IPC ports do (no deferral: that is for the ftrace readers' threads).
  ServiceLock lock(this);
  ConnectedProducer* p = FindProducerLocked(id);
  if (!p || p->kicked) return;
  for (const CopiedChunk& c : chunks) {
    ChunkCopy copy;
    ChunkReadResult r = ChunkReadResult::kBadIndex;
    if (c.bytes.size() <= kMaxPageSize) {
      memcpy(scratch_.get(), c.bytes.data(), c.bytes.size());
      r = ValidateChunkCopy(scratch_.get(), static_cast<uint32_t>(c.bytes.size()), &copy);
    }
    StoreChunkCopyLocked(p, r, copy, c.target_buffer);
    if (p->kicked) return;
  }
  for (const LostChunks& l : lost) {
    bool expired = false;
    if (BufferEntry* buffer = WritableBufferLocked(p, l.target_buffer, &expired))
      buffer->buffer->MarkChunksLost(p->id, l.writer_id, l.last_chunk_id);
  }
  CommitDataLocked(id, request);
}

void TracingService::StoreChunkCopyLocked(ConnectedProducer* p, ChunkReadResult r,
                                          const ChunkCopy& copy, BufferId target) {
  bool expired = false;
  BufferEntry* buffer = WritableBufferLocked(p, target, &expired);
  if (r == ChunkReadResult::kBadIndex || r == ChunkReadResult::kBadHeader) {
    ViolationLocked(p, buffer);
    stats_.chunks_discarded++;
    return;
  }
  if (!buffer) {
    if (expired) {
      stats_.chunks_after_session_end++;
    } else {
      stats_.chunks_discarded++;
      ViolationLocked(p, nullptr);
    }
    return;
  }
  // kBadPackets goes to the buffer too: it keeps a tombstone, so the reader
  // knows the chunk existed and does not wait for it, and counts the
  // violation itself.
  const ChunkHeader& h = copy.header;
  uint32_t size = r == ChunkReadResult::kOk ? copy.used_payload_size : copy.payload_size;
  uint64_t violations_before = buffer->buffer->stats().abi_violations;
  buffer->buffer->CopyChunkUntrusted(p->id, p->uid, h.writer_id, h.chunk_id, h.packet_count(),
                                     h.flags(), scratch_.get() + sizeof(ChunkHeader), size);
  if (buffer->buffer->stats().abi_violations != violations_before) {
    ViolationLocked(p, nullptr);
  } else if (r != ChunkReadResult::kOk) {
    ViolationLocked(p, buffer);
  }
  stats_.chunks_moved++;
  stats_.bytes_moved += size;
  WriteEarlyIfLapHalfFullLocked(*buffer);
}

static bool LapHalfFull(const TraceBuffer& b) { return b.unread_bytes() * 2 >= b.lap_size(); }

bool TracingService::AnyLapHalfFullLocked(const TracingSession& s) const {
  for (BufferId b : s.buffers) {
    auto it = buffers_.find(b);
    if (it != buffers_.end() && it->second.buffer && LapHalfFull(*it->second.buffer)) return true;
  }
  return false;
}

void TracingService::WriteEarlyIfLapHalfFullLocked(const BufferEntry& buffer) {
  if (!LapHalfFull(*buffer.buffer)) return;
  TracingSession* s = FindSessionLocked(buffer.session);
  if (!s || !s->file || s->early_write_posted || s->state != SessionState::kStarted) return;
  s->early_write_posted = true;
  PostTask([this, sid = s->id] { PeriodicWriteIntoFile(sid, false); });
}

void TracingService::ApplyPatchesLocked(ConnectedProducer* p, const std::vector<ChunkPatch>& patches) {
  size_t n = patches.size();
  for (size_t i = 0; i < n;) {
    // One TryPatchChunkContents per run of patches for the same chunk.
    size_t j = i + 1;
    while (j < n && patches[j].target_buffer == patches[i].target_buffer &&
           patches[j].writer_id == patches[i].writer_id &&
           patches[j].chunk_id == patches[i].chunk_id)
      j++;
    const ChunkPatch& first = patches[i];
    bool expired = false;
    BufferEntry* buffer = WritableBufferLocked(p, first.target_buffer, &expired);
    if (first.writer_id == 0 || first.writer_id > kMaxWriterId) {
      stats_.patches_discarded += j - i;
      ViolationLocked(p, buffer);
    } else if (!buffer) {
      if (!expired) {
        stats_.patches_discarded += j - i;
        ViolationLocked(p, nullptr);
      }
    } else {
      buffer->buffer->TryPatchChunkContents(p->id, first.writer_id, first.chunk_id, &patches[i],
                                            j - i, patches[j - 1].has_more_patches);
    }
    i = j;
  }
}

TracingService::ServiceLock::ServiceLock(TracingService* service) : service_(service) {
  service_->mu_.lock();
  service_->ApplyDeferredCommitsLocked();
}

TracingService::ServiceLock::~ServiceLock() {
  service_->ApplyDeferredCommitsLocked();
  service_->mu_.unlock();
}

void TracingService::CommitData(ProducerId id, const CommitDataRequest& request) {
  // A producer's calls come one at a time (its arbiter's drain is
  // exclusive), so if an earlier one of its commits is queued, this one
  // either queues behind it or, holding mu_, applies the queue first.
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (lock.owns_lock()) {
    ApplyDeferredCommitsLocked();
    CommitDataLocked(id, request);
    ApplyDeferredCommitsLocked();  // Any that came while we copied.
    return;
  }
  DeferProducerCall([&](DeferredCommits* d) { d->Append(id, request); });
}

template <typename Append>
void TracingService::DeferProducerCall(const Append& append) {
  {
    std::lock_guard<std::mutex> deferred(deferred_mu_);
    append(&deferred_commits_);
    has_deferred_commits_.store(true);
  }
  // The holder may have looked before our push and be unlocking now: a task
  // on the service thread makes sure the call is applied.
  if (!deferred_task_posted_.exchange(true)) {
    PostTask([this] {
      deferred_task_posted_.store(false);
      ServiceLock lock(this);
    });
  }
}

void TracingService::RunWithServiceLockForTesting(const std::function<void()>& fn) {
  ServiceLock lock(this);
  fn();
}

size_t TracingService::LongestLapForTesting() {
  ServiceLock lock(this);
  size_t longest = 0;
  for (const auto& [id, entry] : buffers_)
    if (entry.buffer) longest = std::max(longest, entry.buffer->lap_size());
  return longest;
}

void TracingService::ApplyDeferredCommitsLocked() {
  if (!has_deferred_commits_.load()) return;
  {
    std::lock_guard<std::mutex> deferred(deferred_mu_);
    std::swap(applying_commits_, deferred_commits_);
    has_deferred_commits_.store(false);
  }
  const DeferredCommits& d = applying_commits_;
  size_t move = 0, patch = 0;
  for (const DeferredCommits::Entry& e : d.entries) {
    if (e.sets_writer_buffer) {
      SetWriterBufferLocked(e.producer, e.writer_id, e.target_buffer);
      continue;
    }
    CommitDataRequest& r = applying_request_;
    r.chunks_to_move.assign(d.moves.begin() + move, d.moves.begin() + move + e.moves);
    r.chunks_to_patch.assign(d.patches.begin() + patch, d.patches.begin() + patch + e.patches);
    r.flush_request_id = e.flush_request_id;
    move += e.moves;
    patch += e.patches;
    CommitDataLocked(e.producer, r);
  }
  stats_.commits_deferred += d.entries.size();
  applying_commits_.Clear();
}

void TracingService::DeferredCommits::Reserve() {
  // A producer can have queued at most the chunks of its SMB: 2048 for
  // `sluice record`'s 8 MiB of 4 KiB pages. Room for several such (growth
  // past it allocates, once).
  entries.reserve(1024);
  moves.reserve(8192);
  patches.reserve(1024);
}

void TracingService::DeferredCommits::Append(ProducerId producer, const CommitDataRequest& request) {
  entries.push_back(Entry{producer, static_cast<uint32_t>(request.chunks_to_move.size()),
                          static_cast<uint32_t>(request.chunks_to_patch.size()), request.flush_request_id,
                          /*sets_writer_buffer=*/false, 0, 0});
  moves.insert(moves.end(), request.chunks_to_move.begin(), request.chunks_to_move.end());
  patches.insert(patches.end(), request.chunks_to_patch.begin(), request.chunks_to_patch.end());
}

void TracingService::DeferredCommits::AppendWriterBuffer(ProducerId producer, uint16_t writer_id,
                                                        uint32_t target_buffer) {
  entries.push_back(Entry{producer, 0, 0, 0, /*sets_writer_buffer=*/true, writer_id, target_buffer});
}

void TracingService::DeferredCommits::Clear() {
  entries.clear();
  moves.clear();
  patches.clear();
}

void TracingService::CommitDataLocked(ProducerId id, const CommitDataRequest& request) {
  ConnectedProducer* p = FindProducerLocked(id);
  if (!p || p->kicked) return;
  // After an idle spell, by pread (TracingServiceOptions::cold_commit_after_ms),
  // unless the producer has just written the chunks through our own mapping.
  const auto now = std::chrono::steady_clock::now();
  const bool cold = now - p->last_commit >= std::chrono::milliseconds(options_.cold_commit_after_ms);
  p->last_commit = now;
  const int memfd = cold && p->shm && !p->in_this_process ? p->shm->fd() : -1;
  // Moves before patches: a patch may target a chunk moved by this request.
  for (const ChunkToMove& m : request.chunks_to_move) {
    MoveChunkLocked(p, m.page, m.chunk, m.target_buffer, memfd);
    if (p->kicked) return;
  }
  if (!request.chunks_to_patch.empty()) ApplyPatchesLocked(p, request.chunks_to_patch);
  if (request.flush_request_id != 0 && !p->kicked) OnFlushAckLocked(id, request.flush_request_id);
}

// The pages of a producer's SMB that can hold a chunk (SharedMemory::
// PagesEverWritten): reading the others' headers would allocate them, a page
// each (most of a large SMB at the end of a short session). All of them for
// a producer without its own SharedMemory here.
static std::vector<uint32_t> PagesEverWritten(const SharedMemory* shm, const SharedMemoryAbi& abi) {
  if (shm) return shm->PagesEverWritten(abi.page_size(), abi.num_pages());
  std::vector<uint32_t> pages;
  for (uint32_t page = 0; page < abi.num_pages(); page++) pages.push_back(page);
  return pages;
}

uint64_t TracingService::ScrapeProducerLocked(ConnectedProducer* p, const TracingSession* session) {
  const SharedMemoryAbi& abi = p->abi;
  uint64_t writer_unknown = 0;
  for (uint32_t page : PagesEverWritten(p->shm.get(), abi)) {
    // acquire: pairs with the producer's release in MarkChunkComplete, so
    // the chunk header read below is the one it completed.
    uint32_t header = abi.page_header(page)->header_bitmap.load(std::memory_order_acquire);
    PageLayout layout = SharedMemoryAbi::LayoutOf(header);
    uint32_t chunks = SharedMemoryAbi::NumChunksOf(header);
    for (uint32_t c = 0; c < chunks; c++) {
      if (SharedMemoryAbi::StateOf(header, c) != ChunkState::kComplete) continue;
      // Peek at the writer id to find the target buffer. Untrusted, and
      // checked again on the copy.
      ChunkHeader peek;
      memcpy(&peek, abi.chunk_begin(page, layout, c), sizeof(peek));
      BufferId target = peek.writer_id <= kMaxWriterId ? p->writer_buffers[peek.writer_id] : 0;
      if (target == 0) {  // Not a registered writer's chunk: leave it.
        writer_unknown++;
        continue;
      }
      if (session && std::find(session->buffers.begin(), session->buffers.end(), target) ==
                         session->buffers.end())
        continue;
      ChunkCopy copy;
      ChunkReadResult r =
          ReadChunkUntrusted(&p->abi, page, c, scratch_.get(), kMaxPageSize, &copy);
      if (r == ChunkReadResult::kNotComplete || r == ChunkReadResult::kBadIndex) continue;
      bool expired = false;
      BufferEntry* buffer = WritableBufferLocked(p, target, &expired);
      if (r != ChunkReadResult::kOk || copy.header.writer_id != peek.writer_id) {
        stats_.chunks_discarded++;
        ViolationLocked(p, buffer);
        if (p->kicked && session) return writer_unknown;
        continue;
      }
      if (!buffer) continue;
      const ChunkHeader& h = copy.header;
      buffer->buffer->CopyChunkUntrusted(p->id, p->uid, h.writer_id, h.chunk_id, h.packet_count(),
                                         h.flags(), scratch_.get() + sizeof(ChunkHeader),
                                         copy.used_payload_size);
      stats_.chunks_scraped++;
      if (TracingSession* s = FindSessionLocked(buffer->session)) s->chunks_scraped++;
    }
  }
  return writer_unknown;
}

uint64_t TracingService::CountChunksBeingWrittenLocked(const ConnectedProducer* p) const {
  const SharedMemoryAbi& abi = p->abi;
  uint64_t count = 0;
  for (uint32_t page : PagesEverWritten(p->shm.get(), abi)) {
    // Only the page header word, atomically: a BeingWritten chunk's bytes
    // belong to its writer, which may still be writing them.
    uint32_t header = abi.page_header(page)->header_bitmap.load(std::memory_order_acquire);
    uint32_t chunks = SharedMemoryAbi::NumChunksOf(header);
    for (uint32_t c = 0; c < chunks; c++)
      if (SharedMemoryAbi::StateOf(header, c) == ChunkState::kBeingWritten) count++;
  }
  return count;
}

std::vector<TracingService::TracingSession*> TracingService::LiveSessionsOfLocked(
    ProducerId producer) {
  std::vector<TracingSession*> live;
  for (auto& [sid, s] : sessions_)
    if (s->state != SessionState::kDisabled && s->producers.count(producer))
      live.push_back(s.get());
  return live;
}

void TracingService::ForgetGoneProducersLocked(TracingSession* s) {
  if (s->read_pass_open) return;
  std::unordered_set<ProducerId> held;
  for (BufferId b : s->buffers) {
    auto it = buffers_.find(b);
    if (it != buffers_.end()) it->second.buffer->ForgetEmptyGoneSequences(&held);
  }
  for (auto it = s->producers.begin(); it != s->producers.end();) {
    const ProducerId id = it->first;
    if (producers_.count(id) || held.count(id)) {
      ++it;
      continue;
    }
    // Its writers' sequence ids: a later producer with the same id gets new ones.
    s->sequence_ids.erase(s->sequence_ids.lower_bound(static_cast<uint32_t>(id) << 16),
                          s->sequence_ids.lower_bound((static_cast<uint32_t>(id) + 1) << 16));
    it = s->producers.erase(it);
  }
}

void TracingService::CountProducerNotReading(Producer* endpoint, const std::string& why) {
  ServiceLock lock(this);
  ConnectedProducer* p = nullptr;
  for (auto& [id, candidate] : producers_)
    if (candidate->endpoint == endpoint) p = candidate.get();
  if (!p || p->kicked || p->not_reading) return;
  p->not_reading = true;
  stats_.producers_disconnected_not_reading++;
  for (TracingSession* s : LiveSessionsOfLocked(p->id)) s->producers_disconnected_not_reading++;
  Log("sluiced: producer " + std::to_string(p->id) + " '" + p->name + "' (pid " +
      std::to_string(p->pid) + ") does not read its socket (" + why + "); disconnecting it");
}

void TracingService::RegisterTraceWriter(ProducerId id, uint16_t writer_id,
                                         uint32_t target_buffer) {
  SetWriterBuffer(id, writer_id, target_buffer);
}

void TracingService::UnregisterTraceWriter(ProducerId id, uint16_t writer_id) {
  SetWriterBuffer(id, writer_id, 0);
}

void TracingService::SetWriterBuffer(ProducerId id, uint16_t writer_id, uint32_t target_buffer) {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (lock.owns_lock()) {
    ApplyDeferredCommitsLocked();
    SetWriterBufferLocked(id, writer_id, target_buffer);
    ApplyDeferredCommitsLocked();
    return;
  }
  DeferProducerCall([&](DeferredCommits* d) { d->AppendWriterBuffer(id, writer_id, target_buffer); });
}

void TracingService::SetWriterBufferLocked(ProducerId id, uint16_t writer_id, uint32_t target_buffer) {
  ConnectedProducer* p = FindProducerLocked(id);
  if (!p || p->kicked) return;
  if (writer_id == 0 || writer_id > kMaxWriterId) {
    ViolationLocked(p, nullptr);
    return;
  }
  p->writer_buffers[writer_id] = target_buffer;
}

void TracingService::RegisterDataSource(ProducerId id, const DataSourceDescriptor& descriptor) {
  ServiceLock lock(this);
  ConnectedProducer* p = FindProducerLocked(id);
  if (!p || p->kicked) return;
  if (descriptor.name.empty() || descriptor.name.size() > 256) {
    ViolationLocked(p, nullptr);
    return;
  }
  auto it = std::find_if(p->data_sources.begin(), p->data_sources.end(),
                         [&](const DataSourceDescriptor& d) { return d.name == descriptor.name; });
  if (it != p->data_sources.end()) {
    *it = descriptor;
    return;
  }
  if (p->data_sources.size() >= options_.max_data_sources_per_producer) {
    ViolationLocked(p, nullptr);
    return;
  }
  p->data_sources.push_back(descriptor);
  data_sources_seen_++;
  // Sessions already running pick up a data source that appears late.
  for (auto& [sid, s] : sessions_)
    if (s->state == SessionState::kStarted) MaybeStartDataSourceLocked(s.get(), p, descriptor);
}

void TracingService::UnregisterDataSource(ProducerId id, const std::string& name) {
  ServiceLock lock(this);
  ConnectedProducer* p = FindProducerLocked(id);
  if (!p || p->kicked) return;
  std::erase_if(p->data_sources, [&](const DataSourceDescriptor& d) { return d.name == name; });
  // Its instances count as stopped.
  for (auto& [sid, s] : sessions_)
    for (auto& [iid, inst] : s->instances)
      if (inst.producer == id && inst.name == name) MarkInstanceStoppedLocked(s.get(), iid);
}

}  // namespace sluice
