#include "shm/shared_memory_arbiter.h"

#include <sched.h>

#include <algorithm>

#include "shm/smb_trace_writer.h"

namespace sluice {
namespace {

// Queue room: every chunk of the SMB (each is queued at most once while
// Complete), a generous allowance for patches and (un)registrations.
size_t QueueCapacityFor(const SharedMemoryAbi& abi) {
  return static_cast<size_t>(abi.num_pages()) * kMaxChunksPerPage * 2 + 4096;
}

}  // namespace

SharedMemoryArbiter::SharedMemoryArbiter(uint8_t* start, uint32_t size, uint32_t page_size,
                                         CommitDataSink* sink, ArbiterOptions options)
    : abi_(start, size, page_size),
      sink_(sink),
      options_(options),
      batch_entries_(std::max<uint32_t>(
          1, std::min<uint32_t>(options.commit_batch_entries,
                                abi_.num_pages() *
                                    kChunksForLayout[static_cast<uint32_t>(options.layout)] / 8))),
      queue_(QueueCapacityFor(abi_)) {
  writer_ids_[0].store(1, std::memory_order_relaxed);  // Id 0 is "no writer".
}

SharedMemoryArbiter::~SharedMemoryArbiter() { FlushPendingCommitData(); }

std::unique_ptr<TraceWriter> SharedMemoryArbiter::CreateTraceWriter(
    uint32_t target_buffer, BufferExhaustedPolicy policy) {
  uint16_t id = AcquireWriterId(target_buffer);
  if (id == 0) {
    stats_.Add(&ArbiterStats::writer_ids_exhausted);
    return std::make_unique<SmbTraceWriter>(nullptr, 0, target_buffer, policy);
  }
  return std::make_unique<SmbTraceWriter>(this, id, target_buffer, policy);
}

bool SharedMemoryArbiter::TryTakeChunkOf(uint32_t page, Chunk* chunk) {
  // A few attempts: a CAS fails when another chunk of the same page changed
  // state, which says nothing about the chunk we want.
  for (int attempt = 0; attempt < 4; attempt++) {
    uint32_t header = abi_.LoadHeaderRelaxed(page);
    PageLayout layout = SharedMemoryAbi::LayoutOf(header);
    uint32_t chunk_index = kMaxChunksPerPage;
    if (layout == PageLayout::kNotPartitioned) {
      if (!abi_.TryPartitionPage(page, options_.layout)) continue;
      layout = options_.layout;
      chunk_index = 0;
    } else {
      uint32_t n = SharedMemoryAbi::NumChunksOf(header);
      for (uint32_t c = 0; c < n; c++) {
        if (SharedMemoryAbi::StateOf(header, c) == ChunkState::kFree) {
          chunk_index = c;
          break;
        }
      }
      if (chunk_index == kMaxChunksPerPage) return false;  // Page full.
      if (!abi_.TryAcquireChunkForWriting(page, chunk_index, header)) continue;
    }
    chunk->begin = abi_.chunk_begin(page, layout, chunk_index);
    chunk->size = ChunkSizeFor(abi_.page_size(), layout);
    chunk->page = page;
    chunk->index = chunk_index;
    return true;
  }
  return false;
}

SharedMemoryArbiter::Chunk SharedMemoryArbiter::GetNewChunk(uint32_t preferred_page, uint32_t scan_from) {
  const uint32_t num_pages = abi_.num_pages();
  Chunk chunk;
  if (num_pages == 0) return chunk;
  if (preferred_page < num_pages && TryTakeChunkOf(preferred_page, &chunk)) {
    chunks_taken_.fetch_add(1, std::memory_order_relaxed);
    return chunk;
  }
  const uint32_t first =
      scan_from < num_pages ? scan_from : page_hint_.load(std::memory_order_relaxed) % num_pages;
  for (uint32_t i = 0; i < num_pages; i++) {
    uint32_t page = (first + i) % num_pages;
    if (TryTakeChunkOf(page, &chunk)) {
      page_hint_.store(page, std::memory_order_relaxed);
      chunks_taken_.fetch_add(1, std::memory_order_relaxed);
      return chunk;
    }
  }
  stats_.Add(&ArbiterStats::chunk_acquire_failures);
  return Chunk{};
}

uint64_t SharedMemoryArbiter::FreeBytes(uint64_t up_to) const {
  if (service_gone()) return up_to;
  const uint32_t num_pages = abi_.num_pages();
  const uint32_t whole_page = ChunkSizeFor(abi_.page_size(), PageLayout::kDiv1);
  // Relaxed (see free_at_scan_): a hint.
  const uint32_t taken = chunks_taken_.load(std::memory_order_relaxed);
  const uint64_t at_scan = free_at_scan_.load(std::memory_order_relaxed);
  const uint64_t known = (at_scan >> 32) * 1024;
  const uint64_t since = uint64_t{taken - static_cast<uint32_t>(at_scan)} * whole_page;
  if (known > since && known - since >= up_to) return up_to;
  stats_.Add(&ArbiterStats::free_space_scans);
  const uint32_t first = num_pages ? page_hint_.load(std::memory_order_relaxed) % num_pages : 0;
  const uint64_t enough = up_to + uint64_t{num_pages} * whole_page / 2;
  uint64_t found = 0;
  for (uint32_t i = 0; i < num_pages && found < enough; i++) {
    const uint32_t page = (first + i) % num_pages;
    // Relaxed: the answer is a hint, and a chunk freed a moment later is
    // seen at the caller's next question.
    const uint32_t header = abi_.LoadHeaderRelaxed(page);
    const PageLayout layout = SharedMemoryAbi::LayoutOf(header);
    if (layout == PageLayout::kNotPartitioned) {
      found += whole_page;
      continue;
    }
    const uint32_t n = SharedMemoryAbi::NumChunksOf(header);
    for (uint32_t c = 0; c < n; c++) {
      if (SharedMemoryAbi::StateOf(header, c) == ChunkState::kFree) found += ChunkSizeFor(abi_.page_size(), layout);
    }
  }
  free_at_scan_.store(std::min<uint64_t>(found / 1024, UINT32_MAX) << 32 | taken, std::memory_order_relaxed);
  return std::min(found, up_to);
}

void SharedMemoryArbiter::ReturnCompletedChunk(const Chunk& chunk, uint32_t target_buffer,
                                               const ChunkPatch* patches, uint32_t num_patches) {
  abi_.MarkChunkComplete(chunk.page, chunk.index);
  Entry e;
  e.kind = Entry::kMove;
  e.move = ChunkToMove{chunk.page, chunk.index, target_buffer};
  e.SetPatches(patches, num_patches);
  Push(e);
  MaybeDrain();
}

void SharedMemoryArbiter::QueuePatches(const ChunkPatch* patches, uint32_t count) {
  Entry e;
  e.kind = Entry::kPatch;
  e.SetPatches(patches, count);
  Push(e);
}

void SharedMemoryArbiter::Push(const Entry& entry) {
  while (!queue_.TryPush(entry)) {
    // Full: only possible transiently (see the header). Drain it ourselves,
    // or let the current drainer finish.
    bool expected = false;
    if (draining_.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
      DrainHeld(0);
      draining_.store(false, std::memory_order_release);
    } else {
      sched_yield();
    }
  }
}

void SharedMemoryArbiter::MaybeDrain() {
  if (queue_.ApproxSize() < batch_entries_) return;
  TryDrainNow();
}

void SharedMemoryArbiter::TryDrainNow() {
  bool expected = false;
  // acquire: pairs with the previous drainer's release; request_ is ours now.
  if (!draining_.compare_exchange_strong(expected, true, std::memory_order_acquire)) return;
  DrainHeld(0);
  draining_.store(false, std::memory_order_release);
}

void SharedMemoryArbiter::FlushPendingCommitData(uint64_t flush_request_id) {
  for (;;) {
    bool expected = false;
    if (draining_.compare_exchange_weak(expected, true, std::memory_order_acquire)) break;
    sched_yield();
  }
  DrainHeld(flush_request_id);
  draining_.store(false, std::memory_order_release);
}

namespace {
// The arbiter whose FlushBatch this thread is in, if any. Only this thread
// reads or writes it.
thread_local const SharedMemoryArbiter* t_flush_batch_of = nullptr;
}  // namespace

SharedMemoryArbiter::FlushBatch::FlushBatch(SharedMemoryArbiter* arbiter, uint64_t flush_request_id)
    : arbiter_(arbiter), flush_request_id_(flush_request_id) {
  assert(t_flush_batch_of == nullptr);
  t_flush_batch_of = arbiter;
}

SharedMemoryArbiter::FlushBatch::~FlushBatch() {
  t_flush_batch_of = nullptr;
  arbiter_->FlushPendingCommitData(flush_request_id_);
}

void SharedMemoryArbiter::CommitPending() {
  if (t_flush_batch_of == this) return;
  FlushPendingCommitData();
}

void SharedMemoryArbiter::SendRequestHeld() {
  stats_.Add(&ArbiterStats::chunks_committed, request_.chunks_to_move.size());
  stats_.Add(&ArbiterStats::patches_committed, request_.chunks_to_patch.size());
  stats_.Add(&ArbiterStats::commit_calls);
  sink_->CommitData(request_);
  request_.clear();
}

void SharedMemoryArbiter::DrainHeld(uint64_t flush_request_id) {
  request_.clear();
  auto send = [this] {
    if (request_.empty()) return;
    SendRequestHeld();
  };
  Entry e;
  while (queue_.TryPop(&e)) {
    switch (e.kind) {
      case Entry::kMove:
        request_.chunks_to_move.push_back(e.move);
        [[fallthrough]];  // Its patches, if any, follow the move.
      case Entry::kPatch:
        request_.chunks_to_patch.insert(request_.chunks_to_patch.end(), e.patches,
                                        e.patches + e.num_patches);
        break;
      case Entry::kRegister:
        send();
        sink_->RegisterTraceWriter(e.writer_id, e.target_buffer);
        break;
      case Entry::kUnregister:
        send();
        sink_->UnregisterTraceWriter(e.writer_id);
        FreeWriterIdBit(e.writer_id);
        break;
    }
  }
  if (flush_request_id != 0) {
    request_.flush_request_id = flush_request_id;
    SendRequestHeld();
  } else {
    send();
  }
}

uint16_t SharedMemoryArbiter::AcquireWriterId(uint32_t target_buffer) {
  for (int w = 0; w < kIdWords; w++) {
    uint64_t bits = writer_ids_[w].load(std::memory_order_relaxed);
    while (bits != ~0ull) {
      int bit = __builtin_ctzll(~bits);
      // acq_rel: acquire pairs with FreeWriterIdBit's release (the previous
      // owner's chunk-id counter is visible to us).
      if (writer_ids_[w].compare_exchange_weak(bits, bits | (1ull << bit),
                                               std::memory_order_acq_rel,
                                               std::memory_order_relaxed)) {
        uint16_t id = static_cast<uint16_t>(w * 64 + bit);
        Entry e;
        e.kind = Entry::kRegister;
        e.writer_id = id;
        e.target_buffer = target_buffer;
        Push(e);
        return id;
      }
    }
  }
  return 0;
}

void SharedMemoryArbiter::ReleaseWriterId(uint16_t writer_id) {
  Entry e;
  e.kind = Entry::kUnregister;
  e.writer_id = writer_id;
  Push(e);
}

void SharedMemoryArbiter::FreeWriterIdBit(uint16_t writer_id) {
  // release: pairs with AcquireWriterId's acquire (see there).
  writer_ids_[writer_id / 64].fetch_and(~(1ull << (writer_id % 64)), std::memory_order_release);
}

ArbiterStats SharedMemoryArbiter::stats() const { return stats_.Load(); }

}  // namespace sluice
