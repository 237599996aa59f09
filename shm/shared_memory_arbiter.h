// SharedMemoryArbiter: the producer's side of the SMB.
//
// It hands free chunks to TraceWriters, takes completed chunks back, and
// batches what the service must do with them (move chunks into central
// buffers, apply patches) into CommitData calls. One arbiter per producer
// connection; any number of threads use it at once. docs/ABI.md has the
// commit protocol with a sequence diagram.
//
// Threads and ownership:
//  - Chunk acquisition (GetNewChunk) is lock-free: a writer first tries the
//    page it wrote kRecentPages chunks ago (its own, long since committed),
//    then scans the pages from its home (the page of its first chunk; a new
//    writer's scan starts from a rotating hint), and takes a Free chunk by
//    CAS on the page header (shm/shm_abi.h has the memory orders). The first
//    try keeps each writer thread on pages whose cache lines it already owns:
//    with a shared scan every page alternated between threads and each 4 KiB
//    packet paid for pulling its lines from the other core (2 threads ran at
//    0.56x one thread's throughput with 4 KiB packets; docs/PERFORMANCE.md).
//    The home keeps a writer that flushes now and then on the same pages
//    round after round: scanning on from the rotating hint, a recorder at
//    rest wrote its few chunks a round into pages never touched before, each
//    a page fault in the producer and in the service, until its writers had
//    gone round the whole SMB (a quarter of sluiced's and sluice-probes' CPU
//    in a profile at rest with one-minute rounds, 2026-12-05).
//  - Completed chunks, patches and writer (un)registrations go into one
//    lock-free FIFO (BoundedQueue). Its capacity exceeds the number of chunks
//    in the SMB plus the patch slots of every writer, and an entry for a chunk
//    is queued only while that chunk is Complete, so a push fails only
//    transiently; the pusher then drains the queue itself.
//  - Draining (turning queued entries into CommitDataSink calls) is done by
//    whichever thread wins `draining_` (a try-lock: losers do not wait unless
//    they are flushing). The sink therefore sees one call at a time, in FIFO
//    order: a chunk's move always reaches the service before its patches, and
//    a writer's registration before its chunks.
//  - Writer ids come from a lock-free bitmap. An id is freed only after its
//    UnregisterTraceWriter has been delivered, so the service never sees two
//    live writers with one id. Chunk ids are kept per writer id across reuse:
//    a reused id continues its predecessor's chunk-id sequence, which keeps the
//    service's per-sequence ordering and gap detection valid.
#ifndef SLUICE_SHM_SHARED_MEMORY_ARBITER_H_
#define SLUICE_SHM_SHARED_MEMORY_ARBITER_H_

#include <atomic>
#include <cassert>
#include <cstdint>
#include <memory>

#include "shm/bounded_queue.h"
#include "shm/commit_data.h"
#include "shm/shm_abi.h"
#include "shm/trace_writer.h"
#include "shm/base/atomic_stats.h"

namespace sluice {

// What a TraceWriter does when no chunk is free.
enum class BufferExhaustedPolicy {
  // Discard the packet, count it, mark the next packet previous_packet_dropped.
  kDrop,
  // Commit what is pending and wait up to stall_timeout_ms for the service to
  // free a chunk; then drop as kDrop does.
  kStall,
};

struct ArbiterOptions {
  PageLayout layout = PageLayout::kDiv1;
  uint32_t stall_timeout_ms = 100;
  // Drain the commit queue once this many entries are waiting.
  uint32_t commit_batch_entries = 16;
};

struct ArbiterStats {
  uint64_t chunks_committed = 0;
  uint64_t patches_committed = 0;
  uint64_t chunk_acquire_failures = 0;  // No free chunk at that moment.
  uint64_t writer_ids_exhausted = 0;    // CreateTraceWriter found no free id.
  uint64_t commit_calls = 0;
  uint64_t free_space_scans = 0;  // FreeBytes questions its memory could not answer.
};

class SharedMemoryArbiter {
 public:
  // A chunk owned by one writer (state BeingWritten). Plain value; the writer
  // keeps it until it returns the chunk.
  struct Chunk {
    uint8_t* begin = nullptr;  // ChunkHeader
    uint32_t size = 0;         // Header + payload.
    uint32_t page = 0;
    uint32_t index = 0;
    bool valid() const { return begin != nullptr; }
    ChunkHeader* header() const { return reinterpret_cast<ChunkHeader*>(begin); }
    uint8_t* payload_begin() const { return begin + sizeof(ChunkHeader); }
    uint8_t* end() const { return begin + size; }
  };

  // `start`/`size`: the mapped SMB; `page_size` as agreed with the service.
  // `sink` outlives the arbiter.
  SharedMemoryArbiter(uint8_t* start, uint32_t size, uint32_t page_size, CommitDataSink* sink,
                      ArbiterOptions options = {});
  ~SharedMemoryArbiter();
  SharedMemoryArbiter(const SharedMemoryArbiter&) = delete;
  SharedMemoryArbiter& operator=(const SharedMemoryArbiter&) = delete;

  // A writer for one sequence. When all 1023 ids are taken, returns a writer
  // that drops every packet (writer_id() == 0) and counts them.
  std::unique_ptr<TraceWriter> CreateTraceWriter(
      uint32_t target_buffer, BufferExhaustedPolicy policy = BufferExhaustedPolicy::kDrop);

  // Delivers every queued entry now. The last CommitData call carries
  // `flush_request_id` (sent even when nothing was queued, if non-zero).
  // Waits for a concurrent drainer to finish.
  void FlushPendingCommitData(uint64_t flush_request_id = 0);

  // One CommitData for a producer's flush of several writers: while a
  // FlushBatch lives, CommitPending on its thread sends nothing (the writers'
  // Flush leaves their chunks queued), and its end delivers all that is
  // queued, the last CommitData carrying `flush_request_id`, which is the
  // flush's acknowledgement. Why: sluice-probes flushing its CPUs, its
  // counters and its process scan one after another sent five messages a
  // round, and each woke the service (through the daemons, sluiced) from
  // cold: at rest with 10 s rounds, half of sluiced's CPU. Other threads are
  // not held back, and the queue still drains by itself once a batch's worth
  // is waiting (MaybeDrain), so a long flush streams as before. One batch per
  // thread at a time.
  class FlushBatch {
   public:
    FlushBatch(SharedMemoryArbiter* arbiter, uint64_t flush_request_id);
    ~FlushBatch();
    FlushBatch(const FlushBatch&) = delete;
    FlushBatch& operator=(const FlushBatch&) = delete;

   private:
    SharedMemoryArbiter* const arbiter_;
    const uint64_t flush_request_id_;
  };
  // FlushPendingCommitData(), unless this thread is in a FlushBatch of this
  // arbiter, whose end delivers instead. For TraceWriter::Flush.
  void CommitPending();

  ArbiterStats stats() const;
  const SharedMemoryAbi& abi() const { return abi_; }

  // The service is gone (the producer's connection closed): no chunk will be
  // freed again, so kStall writers drop at once instead of waiting
  // stall_timeout_ms for every packet. One-way; any thread.
  void MarkServiceGone() { service_gone_.store(true, std::memory_order_relaxed); }
  bool service_gone() const { return service_gone_.load(std::memory_order_relaxed); }
  const ArbiterOptions& options() const { return options_; }

  // The SMB's Free chunk space (unpartitioned pages included) right now, up
  // to `up_to` bytes; `up_to` once the service is gone (nothing will be
  // freed again, and writers then drop at once instead of waiting).
  // Advisory: nothing is reserved, and other writers may take the room
  // before this caller does. Readers of an outside source that can hold its
  // data (the kernel's ring buffers) ask before taking more, so that a full
  // SMB leaves the loss to the source, which counts it exactly
  // (TraceWriter::RoomBytes). Answers from the last scan's count when that,
  // less a whole page for every chunk taken since, still covers `up_to`;
  // else scans from where the last chunk was taken until it has found
  // `up_to` and half the SMB more (every page header when the SMB is that
  // full) and keeps the count. Any thread.
  uint64_t FreeBytes(uint64_t up_to) const;

  // --- For SmbTraceWriter. ---
  static constexpr uint32_t kNoPage = ~0u;
  // Takes a Free chunk (lock-free), from `preferred_page` if it has one,
  // else the first Free one from `scan_from` on (kNoPage: from where the
  // last chunk was taken). Invalid Chunk if none is free now.
  Chunk GetNewChunk(uint32_t preferred_page = kNoPage, uint32_t scan_from = kNoPage);
  // Marks the chunk Complete and queues its move to `target_buffer`, with up
  // to kPatchesPerEntry patches (of earlier chunks) in the same entry.
  void ReturnCompletedChunk(const Chunk& chunk, uint32_t target_buffer,
                            const ChunkPatch* patches = nullptr, uint32_t num_patches = 0);
  // Queues up to kPatchesPerEntry patches as one queue entry (one push:
  // every push pulls the queue's cache lines from the last core that used
  // them, so the patches of a packet go together).
  static constexpr uint32_t kPatchesPerEntry = 4;
  void QueuePatches(const ChunkPatch* patches, uint32_t count);
  // Drains if enough is queued and no one else is draining. Never waits.
  void MaybeDrain();
  // Drains whatever is queued unless someone else is draining. Never waits.
  // Called when no chunk is free: the service can only free chunks it was
  // told about.
  void TryDrainNow();
  // Writer ids: 0 if none is free. The next chunk id of an id (only its
  // current owner calls these).
  uint16_t AcquireWriterId(uint32_t target_buffer);
  void ReleaseWriterId(uint16_t writer_id);  // Queued behind its commits.
  // The writer keeps the counter while it owns the id (a shared array
  // written per chunk would put writers on one cache line) and hands it back
  // before ReleaseWriterId; the id bitmap's acquire/release orders both.
  uint32_t LoadNextChunkId(uint16_t writer_id) const { return next_chunk_id_[writer_id]; }
  void StoreNextChunkId(uint16_t writer_id, uint32_t next) { next_chunk_id_[writer_id] = next; }

 private:
  struct Entry {
    enum Kind : uint8_t { kMove, kPatch, kRegister, kUnregister };
    Kind kind = kMove;
    uint8_t num_patches = 0;
    ChunkToMove move;
    ChunkPatch patches[kPatchesPerEntry];
    uint16_t writer_id = 0;
    uint32_t target_buffer = 0;

    // Callers pass at most kPatchesPerEntry (SmbTraceWriter takes them in
    // groups of that size).
    void SetPatches(const ChunkPatch* from, uint32_t count) {
      assert(count <= kPatchesPerEntry);
      num_patches = static_cast<uint8_t>(count < kPatchesPerEntry ? count : kPatchesPerEntry);
      for (uint32_t i = 0; i < num_patches; i++) patches[i] = from[i];
    }
  };

  // A Free chunk of `page`, taken by CAS; false if it has none.
  bool TryTakeChunkOf(uint32_t page, Chunk* chunk);
  void Push(const Entry& entry);
  // Requires draining_ held. Empties the queue into sink calls.
  void DrainHeld(uint64_t flush_request_id);
  // Counts and sends request_ to the sink, then clears it. Drain held.
  void SendRequestHeld();
  void FreeWriterIdBit(uint16_t writer_id);

  SharedMemoryAbi abi_;
  CommitDataSink* const sink_;
  const ArbiterOptions options_;
  // min(options.commit_batch_entries, an eighth of the SMB's chunks): a small
  // SMB must not sit full of committed-but-unannounced chunks.
  const uint32_t batch_entries_;
  BoundedQueue<Entry> queue_;

  // Rotating start for the page scan; relaxed: only spreads writers out.
  std::atomic<uint32_t> page_hint_{0};
  // FreeBytes' memory of its last scan, so that a reader asking for room at
  // rest does not load dozens of page headers, each on its own page and cold
  // after minutes (a tenth of a recorder's CPU at rest in a profile of
  // five-minute rounds, 2026-12-05). Only the producer's own takes make
  // chunks un-free (the service only frees them), and a take costs at most
  // a whole page's chunk space, so the count at the scan less a page per
  // take since is a lower bound of what is free now. chunks_taken_: counted
  // by GetNewChunk, wrapping (differences modulo 2^32 hold). free_at_scan_:
  // the scan's count in KiB (rounded down) << 32 | chunks_taken_ when the
  // scan began, stored whole by one atomic so that no reader pairs one
  // scan's count with another's take count. All relaxed: FreeBytes is a
  // hint. A take another thread made a moment ago may be missed, as the
  // scan itself may miss it; RoomBytes' headroom is for those.
  std::atomic<uint32_t> chunks_taken_{0};
  mutable std::atomic<uint64_t> free_at_scan_{0};
  // Try-lock for draining. acquire on taking it, release on dropping it: the
  // request_ scratch below is handed from one drainer to the next.
  std::atomic<bool> draining_{false};
  CommitDataRequest request_;  // Owned by whoever holds draining_.

  // Bit i set: writer id i is in use. Id 0 is never handed out. Set with
  // acq_rel CAS (pairs with the release fetch_and that freed it, so the
  // previous owner's chunk-id counter is visible to the new owner).
  static constexpr int kIdWords = (kMaxWriterId + 1) / 64;
  std::atomic<uint64_t> writer_ids_[kIdWords] = {};
  uint32_t next_chunk_id_[kMaxWriterId + 1] = {};

  // Relaxed: a hint that only shortens waits; a writer that misses it waits
  // one stall timeout more.
  std::atomic<bool> service_gone_{false};

  // Counted by the writers, the drainer and FreeBytes, read as a snapshot
  // for reports (relaxed: see shm/base/atomic_stats.h).
  mutable AtomicStats<ArbiterStats> stats_;
};

}  // namespace sluice

#endif  // SLUICE_SHM_SHARED_MEMORY_ARBITER_H_
