// The service's reader of one SMB chunk, for memory it does not trust.
//
// ReadChunkUntrusted takes a chunk the producer says is Complete
// (Complete -> BeingRead), copies it out in one bounds-checked copy, frees it
// in the SMB (BeingRead -> Free) and validates the copy: writer id range,
// packet count, every fragment's 4-byte size header and the sum of sizes
// against the chunk. Only the copy is parsed afterwards, so a producer that
// keeps writing into the SMB cannot change what was validated.
#ifndef SLUICE_SHM_SMB_CHUNK_READER_H_
#define SLUICE_SHM_SMB_CHUNK_READER_H_

#include <cstdint>

#include "shm/shm_abi.h"

namespace sluice {

enum class ChunkReadResult {
  kOk,
  kBadIndex,     // Page or chunk index outside the SMB or the page's layout.
  kNotComplete,  // The chunk was not in state Complete.
  kBadHeader,    // Writer id 0 or > kMaxWriterId.
  kBadPackets,   // Packet count or a fragment size does not fit the chunk.
};
const char* ChunkReadResultName(ChunkReadResult result);

struct ChunkCopy {
  ChunkHeader header{};         // Copied, then validated.
  uint32_t payload_size = 0;    // Bytes of payload in the copy.
  uint32_t used_payload_size = 0;  // Up to the end of the last fragment.
};

// Copies chunk (`page`, `chunk`) of `abi` into `dst`, which has room for at
// least ChunkSizeFor(page size, kDiv1) bytes; on return dst holds the header
// followed by the payload. On every result except kBadIndex/kNotComplete the
// chunk has been freed in the SMB (a bad chunk is dropped, not kept).
//
// `memfd`, if not -1, is the file `abi` maps whole from offset 0: the copy
// is then a pread(2) of it (the mapping still holds the chunk's state), and
// a copy out of the mapping only if that read comes up short. The kernel
// copies through its own mapping of the pages, never the caller's. Why: on
// a hypervisor that shadows page tables, with the guest ageing its pages,
// a 4 KiB page of the caller's mapping left idle for a minute faults again
// in the host when next touched; 1 MiB of chunks copied a minute after the
// last took 854 us out of the mapping and 299 us by pread, but warm 86 and
// 219 us (page_refault_bench, docs/PERFORMANCE.md "Sluice at rest"). So the
// service reads by pread only a commit that comes after a long idle spell.
ChunkReadResult ReadChunkUntrusted(SharedMemoryAbi* abi, uint32_t page, uint32_t chunk,
                                   uint8_t* dst, uint32_t dst_capacity, ChunkCopy* out,
                                   int memfd = -1);

// Validates a chunk already copied (header + payload, `chunk_size` bytes),
// as ReadChunkUntrusted does after its copy: a relayed chunk arrives as
// bytes (service/relay/). kBadIndex: shorter than a chunk header.
ChunkReadResult ValidateChunkCopy(const uint8_t* chunk, uint32_t chunk_size, ChunkCopy* out);
// Checks `count` fragments ([size varint][bytes]) in payload[0, size).
// Returns false on any overrun or malformed size; *used gets the end offset.
// A last fragment abandoned by its writer (kPacketSizeDropPacket) is valid
// and ends at its header.
bool ValidateFragmentsUntrusted(const uint8_t* payload, uint32_t size, uint16_t count,
                                uint32_t* used);

// Calls fn(const uint8_t* data, uint32_t size) for each fragment of a payload
// of `payload_size` bytes that ValidateFragmentsUntrusted accepted, but an
// abandoned last one.
template <typename Fn>
void ForEachFragment(const uint8_t* payload, uint32_t payload_size, uint16_t count, Fn&& fn) {
  uint32_t off = 0;
  for (uint16_t i = 0; i < count; i++) {
    uint32_t size = 0;
    off += ReadPacketSizeUntrusted(payload + off, payload_size - off, &size);
    if (size == kPacketSizeDropPacket && i + 1 == count) return;
    fn(payload + off, size);
    off += size;
  }
}

}  // namespace sluice

#endif  // SLUICE_SHM_SMB_CHUNK_READER_H_
