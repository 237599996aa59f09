// Feeds random bytes as SMB pages to the service-side chunk reader: page
// headers, layouts, states, chunk headers and packet sizes are all garbage.
// The reader must reject what is invalid without reading out of bounds.
//
// Input: byte 0 picks the page size (4..64 KiB, its low 4 bits) and how the
// chunks are copied (its high 4 bits: 0 out of the mapping, k > 0 by pread(2)
// of a memfd holding the first k/15 of the SMB, as sluiced reads a commit
// after an idle spell; short of 15/15 the pread comes up short and the copy
// falls back to the mapping), bytes 1..8 are commit entries' indices, the
// rest is the SMB's contents (zero-padded to 2 pages).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "shm/base/scoped_fd.h"
#include "shm/shm_abi.h"
#include "shm/smb_chunk_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 9) return 0;
  const uint32_t page_size = 4096u * (1 + data[0] % 16);
  const uint32_t num_pages = 2;
  // Exactly-sized heap block so ASan catches any overrun past the SMB.
  std::vector<uint8_t> smb(static_cast<size_t>(page_size) * num_pages, 0);
  size_t body = size - 9;
  memcpy(smb.data(), data + 9, body < smb.size() ? body : smb.size());
  sluice::SharedMemoryAbi abi(smb.data(), static_cast<uint32_t>(smb.size()), page_size);
  std::vector<uint8_t> copy(sluice::kMaxPageSize);
  sluice::ScopedFd memfd;
  if (const uint32_t fifteenths = data[0] >> 4; fifteenths > 0) {
    memfd.reset(memfd_create("smb_reader_fuzzer", MFD_CLOEXEC));
    if (!memfd.valid()) return 0;
    const size_t held = smb.size() * fifteenths / 15;
    if (write(memfd.get(), smb.data(), held) != static_cast<ssize_t>(held)) return 0;
  }

  auto read = [&](uint32_t page, uint32_t chunk) {
    sluice::ChunkCopy out;
    if (sluice::ReadChunkUntrusted(&abi, page, chunk, copy.data(),
                                   static_cast<uint32_t>(copy.size()), &out, memfd.get()) ==
        sluice::ChunkReadResult::kOk) {
      uint64_t sum = 0;
      sluice::ForEachFragment(copy.data() + sizeof(sluice::ChunkHeader), out.payload_size,
                              out.header.packet_count(),
                              [&](const uint8_t* p, uint32_t n) {
                                for (uint32_t i = 0; i < n; i++) sum += p[i];
                              });
      if (sum == 0xdeadbeef) return;  // Keeps the loop from being optimised out.
    }
  };
  // Commit entries chosen by the input (possibly out of range) ...
  for (int i = 0; i < 4; i++) read(data[1 + 2 * i], data[2 + 2 * i]);
  // ... and every chunk of every page, as a scrape after a producer died.
  for (uint32_t p = 0; p < num_pages; p++)
    for (uint32_t c = 0; c < sluice::kMaxChunksPerPage; c++) read(p, c);
  return 0;
}
