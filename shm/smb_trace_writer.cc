#include "shm/smb_trace_writer.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

namespace sluice {

SmbTraceWriter::SmbTraceWriter(SharedMemoryArbiter* arbiter, uint16_t writer_id,
                               uint32_t target_buffer, BufferExhaustedPolicy policy)
    : arbiter_(writer_id == 0 ? nullptr : arbiter),
      writer_id_(arbiter == nullptr ? 0 : writer_id),
      target_buffer_(target_buffer),
      policy_(policy) {
  if (arbiter_ != nullptr) next_chunk_id_ = arbiter_->LoadNextChunkId(writer_id_);
}

SmbTraceWriter::~SmbTraceWriter() {
  if (arbiter_ == nullptr) return;
  // Every packet has ended (the Packet handle finalizes before the writer
  // goes), so every patch slot is filled.
  if (chunk_.valid()) ReturnChunk();
  SendReadyPatches();
  arbiter_->StoreNextChunkId(writer_id_, next_chunk_id_);
  arbiter_->ReleaseWriterId(writer_id_);
  arbiter_->FlushPendingCommitData();
}

bool SmbTraceWriter::AcquireChunk() {
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline{};
  std::chrono::microseconds backoff(20);
  for (;;) {
    const uint32_t slot = static_cast<uint32_t>(chunks_taken_ % kRecentPages);
    chunk_ = arbiter_->GetNewChunk(
        chunks_taken_ >= kRecentPages ? recent_pages_[slot] : SharedMemoryArbiter::kNoPage, home_page_);
    if (chunk_.valid()) {
      if (chunks_taken_ == 0) home_page_ = chunk_.page;
      recent_pages_[slot] = chunk_.page;
      chunks_taken_++;
      chunk_id_ = next_chunk_id_++;
      // Plain stores: the chunk is BeingWritten and ours; the release CAS to
      // Complete publishes them.
      ChunkHeader* header = chunk_.header();
      header->chunk_id = chunk_id_;
      header->writer_id = writer_id_;
      header->packets = 0;
      chunk_packets_ = 0;
      chunk_flags_ = 0;
      write_ptr_ = chunk_.payload_begin();
      return true;
    }
    if (policy_ == BufferExhaustedPolicy::kDrop || arbiter_->service_gone()) {
      arbiter_->TryDrainNow();
      return false;
    }
    // kStall: let the service free chunks, then retry until the deadline.
    if (deadline == Clock::time_point{})
      deadline = Clock::now() + std::chrono::milliseconds(arbiter_->options().stall_timeout_ms);
    arbiter_->FlushPendingCommitData();
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(backoff);
    if (backoff < std::chrono::milliseconds(2)) backoff *= 2;
  }
}

void SmbTraceWriter::ReturnChunk() {
  chunk_.header()->packets = ChunkHeader::PackPackets(chunk_packets_, chunk_flags_);
  // Filled patches ride along with the move (one queue push for both). They
  // are never late: they belong to a packet that ended in this chunk, which
  // the service cannot emit before this chunk arrives anyway.
  ChunkPatch ready[SharedMemoryArbiter::kPatchesPerEntry];
  const uint32_t count = TakeReadyPatches(ready);
  arbiter_->ReturnCompletedChunk(chunk_, target_buffer_, ready, count);
  chunk_ = SharedMemoryArbiter::Chunk{};
  SendReadyPatches();  // More than fitted (rare).
}

void SmbTraceWriter::WriteSequenceFlags() {
  if (first_packet_) writer_.WriteVarInt(kTracePacketFirstPacketOnSequenceField, 1);
  if (previous_packet_dropped_) writer_.WriteVarInt(kTracePacketPreviousPacketDroppedField, 1);
}

ProtoWriter* SmbTraceWriter::BeginPacket() {
  packet_open_ = true;
  packet_fragmented_ = false;
  dropping_ = false;
  if (arbiter_ == nullptr) {
    dropping_ = true;
    writer_.Reset(ScratchRange(), this);
    return &writer_;
  }
  constexpr size_t kNeeded = kPacketHeaderSize + ProtoWriter::kMinRangeBytes;
  if (chunk_.valid() && (chunk_packets_ >= kMaxPacketsPerChunk ||
                         static_cast<size_t>(chunk_.end() - write_ptr_) < kNeeded)) {
    ReturnChunk();
  }
  if (!chunk_.valid() && !AcquireChunk()) {
    dropping_ = true;
    writer_.Reset(ScratchRange(), this);
    return &writer_;
  }
  fragment_size_field_ = write_ptr_;
  chunk_packets_++;
  writer_.Reset(ByteRange{write_ptr_ + kPacketHeaderSize, chunk_.end()}, this);
  WriteSequenceFlags();
  return &writer_;
}

void SmbTraceWriter::EndPacket() {
  packet_open_ = false;
  if (dropping_) {
    dropping_ = false;
    packets_lost_++;
    previous_packet_dropped_ = true;
    return;
  }
  if (writer_.misused() && !packet_fragmented_) {
    // A malformed packet still wholly in our chunk: take it back.
    write_ptr_ = fragment_size_field_;
    chunk_packets_--;
    packets_lost_++;
    previous_packet_dropped_ = true;
    return;
  }
  if (writer_.misused()) packets_lost_++;  // Already partly committed; the service drops it.
  uint8_t* end = writer_.cursor();
  ProtoWriter::WriteRedundantVarInt(
      static_cast<uint32_t>(end - (fragment_size_field_ + kPacketHeaderSize)),
      fragment_size_field_);
  write_ptr_ = end;
  first_packet_ = false;
  previous_packet_dropped_ = false;
  // A fragmented packet's patches (if any) go with this chunk's move:
  // ReturnChunk().
}

ByteRange SmbTraceWriter::GetNewRange(ProtoWriter* writer, uint8_t* used_end) {
  if (dropping_ || arbiter_ == nullptr) return ScratchRange();  // Overwrite: discarded anyway.
  // 1. Close the fragment in the old chunk.
  ProtoWriter::WriteRedundantVarInt(
      static_cast<uint32_t>(used_end - (fragment_size_field_ + kPacketHeaderSize)),
      fragment_size_field_);
  chunk_flags_ |= ChunkHeader::kLastPacketContinuesOnNextChunk;
  // 2. Size fields of open messages in the old chunk become patches.
  writer->RelocateSizeFields(chunk_.payload_begin(), chunk_.end(),
                             [this](uint8_t* field) { return RelocateToPatchSlot(field); });
  // 3. Hand the old chunk over; take a new one.
  write_ptr_ = used_end;
  ReturnChunk();
  packet_fragmented_ = true;
  if (!AcquireChunk()) {
    // The fragments already committed end in a chain the service will see
    // broken (trace_writer_packet_loss); the rest goes to scratch.
    dropping_ = true;
    return ScratchRange();
  }
  chunk_flags_ = ChunkHeader::kFirstPacketContinuesFromPrevChunk;
  chunk_packets_ = 1;
  fragment_size_field_ = write_ptr_;
  return ByteRange{write_ptr_ + kPacketHeaderSize, chunk_.end()};
}

uint8_t* SmbTraceWriter::RelocateToPatchSlot(uint8_t* size_field) {
  for (PatchSlot& slot : patch_slots_) {
    if (slot.in_use) continue;
    slot.in_use = true;
    slot.chunk_id = chunk_id_;
    slot.offset = static_cast<uint32_t>(size_field - chunk_.payload_begin());
    memset(slot.data, 0, sizeof(slot.data));
    chunk_flags_ |= ChunkHeader::kChunkNeedsPatching;
    return slot.data;
  }
  // Cannot happen (kMaxPatchSlots covers every open message twice over); if it
  // did, the size stays 0 in the chunk and the packet is counted lost.
  packets_lost_++;
  return scratch_;
}

uint32_t SmbTraceWriter::TakeReadyPatches(ChunkPatch* out) {
  uint32_t count = 0;
  for (PatchSlot& slot : patch_slots_) {
    if (count == SharedMemoryArbiter::kPatchesPerEntry) break;
    // A filled redundant varint always has the continuation bit in byte 0.
    if (!slot.in_use || slot.data[0] == 0) continue;
    slot.in_use = false;
    ChunkPatch& patch = out[count++];
    patch.target_buffer = target_buffer_;
    patch.writer_id = writer_id_;
    patch.chunk_id = slot.chunk_id;
    patch.offset = slot.offset;
    memcpy(patch.data, slot.data, sizeof(patch.data));
    patch.has_more_patches = false;
    for (const PatchSlot& other : patch_slots_) {
      if (other.in_use && other.chunk_id == slot.chunk_id) patch.has_more_patches = true;
    }
  }
  return count;
}

void SmbTraceWriter::SendReadyPatches() {
  ChunkPatch ready[SharedMemoryArbiter::kPatchesPerEntry];
  while (uint32_t count = TakeReadyPatches(ready)) arbiter_->QueuePatches(ready, count);
}

uint64_t SmbTraceWriter::RoomBytes(uint64_t up_to) const {
  if (arbiter_ == nullptr) return up_to;
  // Held back: a chunk (what this writer asks for may start a new one; the
  // rest of its current chunk is not counted, as a packet may be open there
  // with the ProtoWriter's cursor), and an eighth of the SMB for its other
  // writers, which may take the room this one saw before it does. At most
  // half the SMB, so that a small SMB still has room to give.
  const uint64_t smb = arbiter_->abi().size();
  const uint64_t chunk = ChunkSizeFor(arbiter_->abi().page_size(), arbiter_->options().layout);
  const uint64_t headroom = std::min(smb / 8 + chunk, smb / 2);
  const uint64_t free = arbiter_->FreeBytes(up_to + headroom);
  return free > headroom ? std::min(free - headroom, up_to) : 0;
}

void SmbTraceWriter::Flush() {
  if (arbiter_ == nullptr) return;
  if (!packet_open_ && chunk_.valid() && chunk_packets_ > 0) ReturnChunk();
  SendReadyPatches();
  arbiter_->CommitPending();
}

}  // namespace sluice
