// SmbTraceWriter: a TraceWriter that writes packets into SMB chunks.
//
// Not thread-safe by design: one thread at a time (see shm/trace_writer.h).
// The hot path (writing fields) touches only this object and the chunk it
// owns; atomics are touched only when a chunk changes hands.
//
// Packets and fragments. Each packet starts with a 4-byte size header in the
// current chunk. When the packet outgrows the chunk, the writer
//   1. fills in the size of the fragment written so far and sets
//      kLastPacketContinuesOnNextChunk on the old chunk,
//   2. moves the size fields of still-open nested messages that lie in the
//      old chunk to patch slots (the chunk gets kChunkNeedsPatching),
//   3. returns the old chunk (Complete) and takes a new one, which starts
//      with kFirstPacketContinuesFromPrevChunk and a new fragment header.
// Patch slots are sent to the service once filled, at the next chunk switch
// or at the end of the packet, whichever comes first; the last one for a
// chunk has has_more_patches = false.
//
//   chunk n (Complete)                    chunk n+1 (BeingWritten)
//   ┌────┬──────┬────────┬─────────────┐  ┌────┬──────┬──────────────┐
//   │hdr │ size │ pkt A  │size│ B part1│  │hdr │ size │ B part 2 ... │
//   └────┴──────┴────────┴─────────────┘  └────┴──────┴──────────────┘
//    flags: LastPacketContinuesOnNextChunk   flags: FirstPacketContinuesFromPrevChunk
//
// No chunk free. With kDrop, the rest of the packet goes to a scratch buffer
// and is discarded; packets_lost() counts it and the next packet that gets
// through carries previous_packet_dropped. With kStall the writer first commits
// what is pending and retries for up to ArbiterOptions::stall_timeout_ms,
// unless the arbiter knows the service is gone (MarkServiceGone): then it
// drops as kDrop does.
#ifndef SLUICE_SHM_SMB_TRACE_WRITER_H_
#define SLUICE_SHM_SMB_TRACE_WRITER_H_

#include <cstdint>

#include "shm/proto_writer.h"
#include "shm/shared_memory_arbiter.h"
#include "shm/trace_writer.h"

namespace sluice {

class SmbTraceWriter final : public TraceWriter, public ProtoWriterSink {
 public:
  // `arbiter` null (or `writer_id` 0) makes a writer that drops everything:
  // used when no writer id is free.
  SmbTraceWriter(SharedMemoryArbiter* arbiter, uint16_t writer_id, uint32_t target_buffer,
                 BufferExhaustedPolicy policy);
  // Returns the current chunk and releases the writer id (after its commits).
  ~SmbTraceWriter() override;

  void Flush() override;
  uint16_t writer_id() const override { return writer_id_; }
  uint64_t packets_lost() const override { return packets_lost_; }
  // The SMB's free chunk space (SharedMemoryArbiter::FreeBytes) less a
  // headroom left to the SMB's other writers (the .cc says how much and
  // why), up to `up_to`. A writer that drops everything (no arbiter) has
  // room: it never waits.
  uint64_t RoomBytes(uint64_t up_to) const override;

  // ProtoWriterSink.
  ByteRange GetNewRange(ProtoWriter* writer, uint8_t* used_end) override;

 protected:
  ProtoWriter* BeginPacket() override;
  void EndPacket() override;

 private:
  // One outstanding patch: a nested size field whose chunk was returned.
  struct PatchSlot {
    bool in_use = false;
    uint32_t chunk_id = 0;
    uint32_t offset = 0;  // From the chunk's payload start.
    uint8_t data[4] = {};  // Filled by ProtoWriter::EndNested (first byte != 0).
  };
  // Enough for every open message (ProtoWriter::kMaxNesting) of the packet in
  // progress plus as many filled but not yet sent.
  static constexpr int kMaxPatchSlots = 2 * ProtoWriter::kMaxNesting;
  static constexpr uint32_t kScratchSize = 4096;

  // Takes a new chunk per policy; false if none could be had.
  bool AcquireChunk();
  // Writes the chunk header's packet count and flags, returns it Complete.
  void ReturnChunk();
  // Moves up to kPatchesPerEntry filled patch slots into `out`; the count.
  uint32_t TakeReadyPatches(ChunkPatch* out);
  // Sends filled patch slots.
  void SendReadyPatches();
  uint8_t* RelocateToPatchSlot(uint8_t* size_field);
  ByteRange ScratchRange() { return ByteRange{scratch_, scratch_ + kScratchSize}; }
  void WriteSequenceFlags();

  SharedMemoryArbiter* const arbiter_;
  const uint16_t writer_id_;
  const uint32_t target_buffer_;
  const BufferExhaustedPolicy policy_;

  SharedMemoryArbiter::Chunk chunk_;
  uint32_t chunk_id_ = 0;
  uint32_t next_chunk_id_ = 0;  // Continues the id's sequence across reuse.
  // Pages of this writer's last kRecentPages chunks, a ring indexed by
  // chunks_taken_: the oldest is the preferred page of the next chunk
  // (SharedMemoryArbiter: page affinity). More than a commit batch, so it
  // has normally been freed by then.
  static constexpr uint32_t kRecentPages = 32;
  uint32_t recent_pages_[kRecentPages];
  // The page of this writer's first chunk: where its scans for a free chunk
  // start (SharedMemoryArbiter: the home).
  uint32_t home_page_ = SharedMemoryArbiter::kNoPage;
  uint64_t chunks_taken_ = 0;
  uint16_t chunk_packets_ = 0;
  uint16_t chunk_flags_ = 0;
  uint8_t* write_ptr_ = nullptr;  // Next free byte of chunk_ between packets.

  ProtoWriter writer_;
  bool packet_open_ = false;
  bool dropping_ = false;             // Current packet is going to scratch.
  bool packet_fragmented_ = false;    // Current packet crossed a chunk.
  uint8_t* fragment_size_field_ = nullptr;
  bool first_packet_ = true;
  bool previous_packet_dropped_ = false;
  uint64_t packets_lost_ = 0;

  PatchSlot patch_slots_[kMaxPatchSlots];
  alignas(8) uint8_t scratch_[kScratchSize];
};

}  // namespace sluice

#endif  // SLUICE_SHM_SMB_TRACE_WRITER_H_
