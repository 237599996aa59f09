#include "shm/smb_chunk_reader.h"

#include <cstring>

namespace sluice {

const char* ChunkReadResultName(ChunkReadResult result) {
  switch (result) {
    case ChunkReadResult::kOk: return "ok";
    case ChunkReadResult::kBadIndex: return "bad_index";
    case ChunkReadResult::kNotComplete: return "not_complete";
    case ChunkReadResult::kBadHeader: return "bad_header";
    case ChunkReadResult::kBadPackets: return "bad_packets";
  }
  return "unknown";
}

bool ValidateFragmentsUntrusted(const uint8_t* payload, uint32_t size, uint16_t count,
                                uint32_t* used) {
  uint32_t off = 0;
  for (uint16_t i = 0; i < count; i++) {
    uint32_t frag = 0;
    const uint32_t header = ReadPacketSizeUntrusted(payload + off, size - off, &frag);
    if (header == 0) return false;
    off += header;
    if (frag == kPacketSizeDropPacket && i + 1 == count) break;  // An abandoned packet.
    if (frag > size - off) return false;
    off += frag;
  }
  *used = off;
  return true;
}

ChunkReadResult ReadChunkUntrusted(SharedMemoryAbi* abi, uint32_t page, uint32_t chunk,
                                   uint8_t* dst, uint32_t dst_capacity, ChunkCopy* out) {
  PageLayout layout;
  switch (abi->TryAcquireChunkForReading(page, chunk, &layout)) {
    case SharedMemoryAbi::AcquireResult::kBadIndex: return ChunkReadResult::kBadIndex;
    case SharedMemoryAbi::AcquireResult::kNotComplete: return ChunkReadResult::kNotComplete;
    case SharedMemoryAbi::AcquireResult::kOk: break;
  }
  uint32_t chunk_size = ChunkSizeFor(abi->page_size(), layout);
  ChunkReadResult result = ChunkReadResult::kOk;
  if (chunk_size < sizeof(ChunkHeader) || chunk_size > dst_capacity) {
    result = ChunkReadResult::kBadIndex;
  } else {
    memcpy(dst, abi->chunk_begin(page, layout, chunk), chunk_size);
  }
  abi->ReleaseChunkAsFree(page, chunk);
  if (result != ChunkReadResult::kOk) return result;
  return ValidateChunkCopy(dst, chunk_size, out);
}

ChunkReadResult ValidateChunkCopy(const uint8_t* chunk, uint32_t chunk_size, ChunkCopy* out) {
  if (chunk_size < sizeof(ChunkHeader)) return ChunkReadResult::kBadIndex;
  const uint8_t* dst = chunk;
  memcpy(&out->header, dst, sizeof(ChunkHeader));
  out->payload_size = chunk_size - static_cast<uint32_t>(sizeof(ChunkHeader));
  if (out->header.writer_id == 0 || out->header.writer_id > kMaxWriterId)
    return ChunkReadResult::kBadHeader;
  if (!ValidateFragmentsUntrusted(dst + sizeof(ChunkHeader), out->payload_size,
                                  out->header.packet_count(), &out->used_payload_size))
    return ChunkReadResult::kBadPackets;
  return ChunkReadResult::kOk;
}

}  // namespace sluice
