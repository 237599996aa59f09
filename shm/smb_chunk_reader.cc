#include "shm/smb_chunk_reader.h"

#include <unistd.h>

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

// Copies `size` bytes of the mapping at `src` into dst by pread(2) of
// `memfd` (see ReadChunkUntrusted), or out of the mapping if that fails or
// comes up short: the SMB cannot shrink (sealed), so a short read is a
// misuse, not a producer's doing, and the mapping has the same bytes.
// Ordering: the kernel reads the pages on this thread, after the acquire
// that took the chunk (TryAcquireChunkForReading) in program order, as the
// memcpy would; so it sees what the producer released with
// MarkChunkComplete. The same physical pages, whichever mapping.
static void CopyChunkBytes(const SharedMemoryAbi& abi, const uint8_t* src, uint32_t size, int memfd,
                           uint8_t* dst) {
  if (memfd >= 0) {
    const off_t offset = static_cast<off_t>(src - abi.start());
    uint32_t done = 0;
    while (done < size) {
      const ssize_t n = pread(memfd, dst + done, size - done, offset + done);
      if (n <= 0) break;  // EINTR included: the mapping finishes the copy.
      done += static_cast<uint32_t>(n);
    }
    if (done == size) return;
  }
  memcpy(dst, src, size);
}

ChunkReadResult ReadChunkUntrusted(SharedMemoryAbi* abi, uint32_t page, uint32_t chunk,
                                   uint8_t* dst, uint32_t dst_capacity, ChunkCopy* out, int memfd) {
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
    CopyChunkBytes(*abi, abi->chunk_begin(page, layout, chunk), chunk_size, memfd, dst);
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
