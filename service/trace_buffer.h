// TraceBuffer: the service's central buffer, one per `buffers {}` entry of
// the trace config. docs/TRACE_BUFFER.md has the diagrams and worked examples.
//
// What goes in. Producers commit *chunks* (shm/shm_abi.h): a chunk belongs to
// one sequence, the (producer, writer) pair, and carries a chunk id that the
// writer increments by one per chunk and that wraps at 2^32. Its payload is
// `num_fragments` fragments, each a 4-byte redundant-varint size and that many
// bytes; a fragment is a whole packet, except that the first one may continue
// the writer's previous chunk (kFirstPacketContinuesFromPrevChunk) and the last
// one may go on in the next chunk (kLastPacketContinuesOnNextChunk). Bytes after
// the last fragment are unused and ignored.
//
// What comes out. Whole packets, per sequence in chunk-id order, fragments
// joined; a packet is emitted only when all its fragments are here (and
// patched). Sequences are visited in (producer, writer) order within a read
// pass; there is no order between sequences.
//
// Storage: one contiguous byte ring of records, written like a log.
//
//   ring   ┌────────┬──────────┬─────┬─────────┬────────┬───────────┬───────┐
//          │ rec A1 │ rec B7   │ pad │ rec A2  │ rec C3 │ (old recs)│  ...  │
//          └────────┴──────────┴─────┴─────────┴────────┴───────────┴───────┘
//          0                                  wptr_ ──▶ oldest record  size_
//   record ┌─────────────────────────────┬─────────────────────┬───────────┐
//          │ RecordHeader (16 B)         │ payload (copy of the │ zeros to  │
//          │ size|kind, chunk id,        │ chunk's payload)     │ 16 B      │
//          │ producer, writer, id high   │                      │ alignment │
//          └─────────────────────────────┴─────────────────────┴───────────┘
//   size|kind: the record size (a multiple of 16) with, in the low 4 bits, the
//   kind: Empty (never written: all-zero memory), Live (an unread chunk),
//   Consumed (read; its space is free), Padding, Tombstone (a chunk dropped for
//   an ABI violation, kept so the reader knows it existed); and a Fence bit.
//
// Index. A hash map (producer, writer) -> SequenceState. Each sequence keeps
// its unread chunks in a circular array sorted by chunk id (ChunkMeta: record
// offset, sizes, fragment count, flags, read position). Chunk ids are unwrapped
// to 64 bits against the highest id seen on the sequence (a 32-bit id is taken
// to be within 2^31 of it), so sorting and "is the next one" are plain integer
// compares across the 2^32 wrap. In-order commits append in O(1); overwrites
// and reads pop the front in O(1); out-of-order commits insert in O(n).
//
// Writing (CopyChunkUntrusted). The header fields are checked first: writer
// id in 1..kMaxWriterId (else the chunk is dropped outright), packet count
// within 10 bits, no continuation or patch flag on a chunk without fragments,
// payload not larger than the ring; a chunk that fails becomes a Tombstone and
// counts abi_violations. The payload is copied once, bounds-checked, into a
// new record at the write cursor. Before writing, the records in the way are
// cleared: an unread chunk counts chunks_overwritten/bytes_overwritten
// (RING_BUFFER) or makes the write fail (DISCARD); read chunks and padding are
// free space (padding_bytes_cleared). A record that does not fit before the end
// of the ring pads the tail (padding_bytes_written) and wraps
// (write_wrap_count); the tail of a cleared record that sticks out past the new
// one becomes padding too.
//
// Laps. The cursor goes round the first kFirstLapBytes of the ring (the
// lap), not the whole ring, while that is enough: a streaming session whose
// consumer reads every second touches a few MiB of a 64 MiB buffer instead of
// faulting in (the kernel zeroing) every page of it once, which was 15% of a
// 10 s recording's CPU (docs/PERFORMANCE.md), and keeps that much less
// resident. When the next record would clear data a full-size ring would
// keep (an unread chunk, or a fence holding chunks after a gap), the lap
// doubles instead, up to the whole ring (GrowLap: the records ahead of the
// cursor move up to the lap's new end, the room between is padding). So no
// chunk is overwritten, discarded or released from a gap sooner than in a
// ring that used all of its size from the start; the lap never shrinks. The
// service faults a session's first lap in when it creates the buffer
// (Prefault), so that those faults are not paid while the session traces,
// and writes a streaming session's file early when a lap is half full
// (TracingService::WriteEarlyIfLapHalfFullLocked), so that a burst does not
// grow it.
//
// Fill policies. RING_BUFFER overwrites the oldest records. DISCARD keeps the
// oldest data: the first chunk that would overwrite an unread chunk is dropped
// (chunks_discarded) and so is every later new chunk, even after a read made
// room (upstream V1's rule: resuming would leave a hole in every sequence).
// Recommits and patches of chunks already stored still work.
//
// Reading (BeginRead, then ReadNextTracePacket until false). Per sequence, from
// the oldest unread chunk:
//  - a fragment that is a whole packet is emitted;
//  - a first fragment flagged as a continuation whose start was not read is
//    skipped (its packet is incomplete);
//  - a last fragment that continues is joined with the next chunks (ids +1,
//    each flagged as continuing; a one-fragment chunk flagged both ways is a
//    middle piece) up to the fragment that ends it: "readahead". If a piece is
//    missing or unpatched, the sequence waits (readaheads_failed), unless
//    the missing piece is known lost (MarkChunksLost): the started packet is
//    then dropped and counted where the loss was (the relay's drops); if the
//    next chunk id is there but does not continue the packet, the writer
//    dropped data: the started packet is dropped (trace_writer_packet_loss);
//  - a chunk flagged kChunkNeedsPatching is read up to, not including, its last
//    fragment (the one whose nested sizes are pending) until a patch batch
//    with other_patches_pending=false arrives;
//  - a chunk copied with chunk_complete=false (scraped while being written)
//    loses its last fragment; the sequence waits at it for the complete
//    recommit.
// A fully read chunk is removed from the index and its record marked Consumed
// (chunks_read, bytes_read): its space is reusable, in both policies.
//
// Framing. Only the copy is ever parsed (never the producer's memory, which
// may still change), fragment by fragment as it is read: each size header
// (a varint of 1 to 4 bytes, as upstream) with ReadPacketSizeUntrusted, each
// size against the payload end, the
// packet count against what the payload holds. At the first malformed fragment
// the rest of the chunk is dropped (abi_violations); what was read before it
// stays read, as upstream. Checking while reading keeps the copy a plain
// memcpy (the service's SMB reader has checked its copy already) and skips
// chunks that are overwritten unread. A patch that breaks the framing is
// caught the same way.
//
// Gaps (upstream docs/concepts/buffers.md, "Atomicity and ordering"). If the
// next unread chunk is not the last read chunk + 1, chunks are missing: with
// 1,2,5,6 in the buffer only 1,2 are emitted; 5,6 are held while the last read
// chunk (2) is still in the ring (its record carries the Fence bit), because
// 3,4 may still be committed out of order. The gap is released, and 5 onwards
// emitted with previous_packet_dropped, when that record is overwritten, when
// the missing chunks are known lost (MarkChunksLost), when
// the producer is gone (MarkProducerGone) or on the final read
// (BeginRead(ReadMode::kFinal)). An unread chunk that is overwritten while it
// is the next to read is a known loss: reading goes on after it at once.
//
// previous_packet_on_sequence_dropped is true when something was lost on the
// sequence since the previous packet returned: a gap, an overwritten or
// dropped chunk, a skipped fragment. As upstream, it is also true for the
// first packet the buffer returns for a sequence: the buffer cannot know what
// came before (the writer marks first_packet_on_sequence for that).
//
// Final read. BeginRead(ReadMode::kFinal) (end of session) and
// MarkProducerGone (for that producer's sequences) stop all waiting: gaps are
// released, a packet still missing fragments is dropped, an unpatched packet
// is dropped (patches_failed counts its chunk) and an incomplete chunk is read
// as far as it is complete.
//
// Late chunks. A new chunk whose id is at or before the reader's position on
// its sequence cannot be emitted without breaking the order: it is dropped and
// counted in chunks_discarded (and chunks_committed_out_of_order).
//
// Stats (names and meaning of upstream's TraceStats.BufferStats). bytes_* are
// record sizes (payload + 16-byte header, rounded up to 16).
//   buffer_size                    ring size in bytes
//   bytes_written, chunks_written  new chunks stored (not recommits, tombstones)
//   chunks_rewritten               recommits of a chunk id still in the buffer
//   bytes_overwritten,
//   chunks_overwritten             unread chunks overwritten (RING_BUFFER)
//   chunks_discarded               new chunks dropped: DISCARD full, or late
//   bytes_read, chunks_read        chunks fully read and removed
//   padding_bytes_written/cleared  padding records written / overwritten
//   write_wrap_count               times the write cursor went back to 0
//   chunks_committed_out_of_order  new chunks older than the newest on their
//                                  sequence
//   patches_succeeded              patches applied (per patch)
//   patches_failed                 patch batches for chunks not here or out of
//                                  bounds; chunks consumed with patches still
//                                  pending (final read). Not a patch for a
//                                  chunk the ring overwrote while it waited
//                                  for it: chunks_overwritten has that loss
//   readaheads_succeeded/failed    joins of a multi-chunk packet done / waiting
//   abi_violations                 chunks with bad header fields (on copy) or
//                                  a malformed fragment (while read, once per
//                                  chunk); recommits rejected as inconsistent
//   trace_writer_packet_loss       fragment chains broken between consecutive
//                                  chunk ids (the writer dropped data)
//
// Trust. Everything except `producer` and `producer_uid` is untrusted: it
// comes from the SMB or the IPC. Nothing is parsed in producer memory; nothing
// the producer sends can make this class read or write outside the ring, or
// crash: it counts and drops.
//
// Thread-safety: none. The service serialises all calls (one task runner).
// Copies and patches may be interleaved with the ReadNextTracePacket calls of
// a read pass; they are seen by the pass if they land in a sequence it has not
// finished.
//
// Hot paths (CopyChunkUntrusted, ReadNextTracePacket) do not allocate in the
// steady state: only a new sequence, or a sequence whose unread-chunk array must
// grow, or a `packet` string that must grow, allocates.
#ifndef SLUICE_SERVICE_TRACE_BUFFER_H_
#define SLUICE_SERVICE_TRACE_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "shm/commit_data.h"

namespace sluice {

using ProducerId = uint16_t;
using WriterId = uint16_t;
using ChunkId = uint32_t;

// Upstream perfetto.protos.TraceStats.BufferStats, field for field.
struct TraceBufferStats {
  uint64_t buffer_size = 0;
  uint64_t bytes_written = 0;
  uint64_t bytes_overwritten = 0;
  uint64_t bytes_read = 0;
  uint64_t padding_bytes_written = 0;
  uint64_t padding_bytes_cleared = 0;
  uint64_t chunks_written = 0;
  uint64_t chunks_rewritten = 0;
  uint64_t chunks_overwritten = 0;
  uint64_t chunks_discarded = 0;
  uint64_t chunks_read = 0;
  uint64_t chunks_committed_out_of_order = 0;
  uint64_t write_wrap_count = 0;
  uint64_t patches_succeeded = 0;
  uint64_t patches_failed = 0;
  uint64_t readaheads_succeeded = 0;
  uint64_t readaheads_failed = 0;
  uint64_t abi_violations = 0;
  uint64_t trace_writer_packet_loss = 0;
};

class TraceBuffer {
 public:
  enum class FillPolicy { kRingBuffer, kDiscard };
  enum class ReadMode {
    kIncremental,  // Waits for missing chunks, fragments and patches.
    kFinal,        // End of session: nothing more will come; see above.
  };

  // Smallest and largest ring. Sizes are rounded down to 16 bytes.
  static constexpr size_t kMinSize = 64;
  static constexpr size_t kMaxSize = 0xfffff000u;  // Record offsets are 32-bit.

  // The first lap: see "Laps" above.
  static constexpr size_t kFirstLapBytes = 4u << 20;

  // nullptr if size_bytes is outside [kMinSize, kMaxSize] or the memory cannot
  // be mapped. The ring is mapped lazily (MAP_NORESERVE): untouched pages cost
  // nothing. first_lap_bytes: the lap to start with (rounded down to 16,
  // within [16, size]); tests use small ones.
  static std::unique_ptr<TraceBuffer> Create(size_t size_bytes, FillPolicy policy,
                                             size_t first_lap_bytes = kFirstLapBytes);
  ~TraceBuffer();
  TraceBuffer(const TraceBuffer&) = delete;
  TraceBuffer& operator=(const TraceBuffer&) = delete;

  // Stores one chunk: `payload`/`size` are the bytes after the ChunkHeader
  // (all of them, or up to the end of the last fragment); the other fields come
  // from the untrusted ChunkHeader. `producer` and `producer_uid` are the
  // service's own. chunk_complete=false: the chunk was scraped while its writer
  // may still be writing its last fragment, which is ignored; a later copy of
  // the same chunk id (of at most the same size) replaces it. Hot path.
  void CopyChunkUntrusted(ProducerId producer, uint32_t producer_uid, WriterId writer,
                          ChunkId chunk_id, uint16_t num_fragments, uint16_t chunk_flags,
                          const uint8_t* payload, size_t size, bool chunk_complete = true);

  // Applies 4-byte patches (ChunkPatch::offset from the payload start,
  // ChunkPatch::data; other fields ignored) to a chunk still in the buffer, all
  // or none. False, counting patches_failed, if the chunk is gone or a patch is
  // out of bounds; false without counting if the ring overwrote the chunk
  // while it waited for patches (the overwrite is the loss, counted).
  // other_patches_pending=false clears kChunkNeedsPatching.
  bool TryPatchChunkContents(ProducerId producer, WriterId writer, ChunkId chunk_id,
                             const ChunkPatch* patches, size_t num_patches,
                             bool other_patches_pending);

  // Starts a read pass over the sequences that have unread chunks.
  void BeginRead() { BeginRead(ReadMode::kIncremental); }
  void BeginRead(ReadMode mode);

  struct PacketSequenceProperties {
    ProducerId producer = 0;
    uint32_t producer_uid = 0;
    WriterId writer = 0;
  };
  // Next whole packet of the pass into *packet (cleared first; its capacity is
  // reused), with at least `tailroom` bytes of capacity left after it for
  // what the caller appends. False when the pass has nothing more to give.
  // Hot path.
  bool ReadNextTracePacket(std::string* packet, PacketSequenceProperties* sequence,
                           bool* previous_packet_on_sequence_dropped, size_t tailroom = 0);

  // A copy that can be read without changing this buffer (session clones,
  // `sluice clone`): the ring bytes in use, the index (every sequence's
  // unread chunks, read position, fence, gap and loss state), the fill
  // state (write cursor, wrapped, DISCARD's latch) and the stats. Reading
  // the copy marks records Consumed in the copy's ring only, and nothing
  // done to this buffer afterwards shows in the copy. What a read pass of
  // this buffer has emitted is not in the copy; a pass's position is not
  // copied (the copy starts with no pass open).
  //
  // Cost: a second ring of the same size, of which the part in use is
  // written: [0, write cursor) on the first lap, the whole lap after a wrap
  // (the rest stays unmapped, MAP_NORESERVE); one memcpy of that part; one
  // allocation per sequence and a copy of its unread-chunk array (32 bytes a
  // chunk). The caller serialises it with the writers like every call here
  // (the service holds its mutex: commits wait for the copy). nullptr if
  // the memory cannot be mapped.
  std::unique_ptr<TraceBuffer> CloneReadOnly() const;
  // The same into `copy`: a buffer from Create() of this one's size and
  // policy, never written. Mapping a fresh ring and faulting it in is most
  // of a first clone's time (the kernel finds and zeroes the pages), so the
  // service creates and Prefault()s the copies before it takes its mutex
  // and copies under it (docs/SERVICE.md, "Cost of a clone", has the
  // figures). False, changing nothing, if `copy` does not fit.
  bool CloneInto(TraceBuffer* copy) const;
  // Faults the first `bytes` of the ring in, writable, now
  // (MADV_POPULATE_WRITE, Linux 5.14+; else a write to each page), so that
  // writing them later costs no page faults. Costs that much memory at once.
  void Prefault(size_t bytes);
  // Bytes of the ring that records cover: what a clone copies.
  size_t used_size() const { return wrapped_ ? lap_ : wptr_; }
  // The lap: the part of the ring the write cursor goes round (see above).
  size_t lap_size() const { return lap_; }
  // Bytes of the records of chunks not read yet (nor overwritten), from the
  // stats: a streaming reader that keeps this under half the lap keeps the
  // lap from growing (TracingService::WriteEarlyIfLapHalfFullLocked).
  uint64_t unread_bytes() const {
    const uint64_t gone = stats_.bytes_read + stats_.bytes_overwritten;
    return stats_.bytes_written > gone ? stats_.bytes_written - gone : 0;
  }

  // Chunks of the sequence up to `last_lost` that have not come will never
  // come (a relay dropped them: service/relay/relay_producer_host.h): a gap
  // that ends at or before it is released at once, not held while the chunk
  // before it is in the ring. Chunks of those ids that come after all are
  // late (counted in chunks_discarded). Nothing if the sequence has no chunk
  // here.
  void MarkChunksLost(ProducerId producer, WriterId writer, ChunkId last_lost);

  // The producer is gone: its sequences are read as in a final read from now
  // on (until it commits again). Its sequences' state is freed once read.
  void MarkProducerGone(ProducerId producer);

  // Frees the state of gone producers' sequences that hold no chunk any more
  // (read, or overwritten unread), as BeginRead does, and adds to *held every
  // producer that still has a sequence here. Ends a read pass that is open,
  // so call it between passes. The service uses it to forget producers that
  // left (and reuse their ids) without waiting for a read.
  void ForgetEmptyGoneSequences(std::unordered_set<ProducerId>* held);

  const TraceBufferStats& stats() const { return stats_; }
  size_t size() const { return size_; }
  FillPolicy fill_policy() const { return policy_; }

  // Walks the ring and the index and checks that they agree (tests, fuzzer).
  bool CheckInvariantsForTesting() const;

 private:
  struct ChunkMeta;
  class ChunkQueue;
  struct SequenceState;
  enum class Step;
  enum class Join;

  TraceBuffer(uint8_t* ring, size_t size, size_t first_lap, FillPolicy policy);

  // Writing.
  SequenceState* FindSequence(ProducerId producer, WriterId writer);
  SequenceState* FindSequenceSlow(uint32_t key);
  SequenceState* FindOrCreateSequence(ProducerId producer, WriterId writer);
  SequenceState* CreateSequence(ProducerId producer, WriterId writer);
  bool MakeRoom(uint32_t record_size, uint32_t* clear_end);
  bool WrapCursor(uint32_t record_size);
  bool HasUnreadRecords(uint32_t begin, uint32_t end, bool gap_fences = false) const;
  bool LapIsFull(uint32_t record_size) const;
  void GrowLapIfFull(uint32_t record_size);
  void GrowLap();
  uint32_t ClearRange(uint32_t begin, uint32_t end);
  void RemoveOverwritten(ProducerId producer, WriterId writer, uint64_t ext, bool live,
                         uint32_t offset, uint32_t size);
  void WritePadding(uint32_t offset, uint32_t size);
  void FinishRecord(uint32_t next, uint32_t clear_end);
  void DropLate(SequenceState* seq, uint64_t ext);
  void Recommit(ChunkMeta* existing, uint16_t num_fragments, uint16_t chunk_flags,
                const uint8_t* payload, size_t size, bool chunk_complete);

  // Reading.
  Step ReadStep(SequenceState* seq, bool final_read, std::string* packet, bool* dropped);
  size_t read_tailroom_ = 0;  // ReadNextTracePacket's, for ReadStep and TryJoin.
  Join TryJoin(SequenceState* seq, std::string* packet, bool* dropped);
  void TakeLoss(SequenceState* seq, bool* dropped);
  // Moves past the front chunk's fragment that ends at payload offset `end`.
  void Advance(SequenceState* seq, ChunkMeta* chunk, uint32_t end);
  void TruncateCorrupt(ChunkMeta* chunk);
  void ConsumeFront(SequenceState* seq);
  void ReleaseGap(SequenceState* seq, uint64_t next_ext);
  void DropFence(SequenceState* seq);

  uint8_t* const ring_;
  const uint32_t size_;
  const FillPolicy policy_;
  uint32_t lap_;               // Where the cursor wraps: <= size_, only grows.
  uint32_t wptr_ = 0;          // Offset of the next record; a record boundary.
  bool wrapped_ = false;       // The lap is covered by records end to end.
  bool discard_all_ = false;   // DISCARD: a chunk was dropped; drop new ones.
  TraceBufferStats stats_;

  using SequenceMap = std::unordered_map<uint32_t, std::unique_ptr<SequenceState>>;
  SequenceMap::iterator EraseSequence(SequenceMap::iterator it);

  SequenceMap sequences_;
  SequenceState* seq_cache_[16] = {};  // Direct-mapped lookup cache.

  std::vector<SequenceState*> read_list_;  // Sequences of the current pass.
  size_t read_index_ = 0;
  bool final_read_ = false;
  std::vector<uint8_t> scratch_;  // Recommits are checked here first.
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_TRACE_BUFFER_H_
