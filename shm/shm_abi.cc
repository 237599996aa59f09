#include "shm/shm_abi.h"

namespace sluice {

SharedMemoryAbi::SharedMemoryAbi(uint8_t* start, uint32_t size, uint32_t page_size)
    : start_(start),
      size_(size),
      page_size_(page_size),
      num_pages_(IsValidPageSize(page_size) ? size / page_size : 0) {}

bool SharedMemoryAbi::TryPartitionPage(uint32_t page, PageLayout layout) {
  uint32_t expected = 0;  // Not partitioned, all free.
  uint32_t desired = (static_cast<uint32_t>(layout) << PageHeader::kLayoutShift) |
                     static_cast<uint32_t>(ChunkState::kBeingWritten);
  // acquire: pairs with the service's release in ReleaseChunkAsFree, which
  // reset this page; its reads of the old chunks happen before our writes.
  return page_header(page)->header_bitmap.compare_exchange_strong(
      expected, desired, std::memory_order_acquire, std::memory_order_relaxed);
}

bool SharedMemoryAbi::TryAcquireChunkForWriting(uint32_t page, uint32_t chunk,
                                                uint32_t expected_header) {
  if (StateOf(expected_header, chunk) != ChunkState::kFree) return false;
  uint32_t desired = WithState(expected_header, chunk, ChunkState::kBeingWritten);
  // acquire: pairs with the service's release in ReleaseChunkAsFree.
  return page_header(page)->header_bitmap.compare_exchange_strong(
      expected_header, desired, std::memory_order_acquire, std::memory_order_relaxed);
}

void SharedMemoryAbi::MarkChunkComplete(uint32_t page, uint32_t chunk) {
  std::atomic<uint32_t>& word = page_header(page)->header_bitmap;
  uint32_t header = word.load(std::memory_order_relaxed);
  // release: pairs with the service's acquire in TryAcquireChunkForReading, so
  // the chunk's header and payload are visible before it is seen Complete.
  while (!word.compare_exchange_weak(header, WithState(header, chunk, ChunkState::kComplete),
                                     std::memory_order_release, std::memory_order_relaxed)) {
  }
}

SharedMemoryAbi::AcquireResult SharedMemoryAbi::TryAcquireChunkForReading(
    uint32_t page, uint32_t chunk, PageLayout* layout) {
  if (page >= num_pages_ || chunk >= kMaxChunksPerPage) return AcquireResult::kBadIndex;
  std::atomic<uint32_t>& word = page_header(page)->header_bitmap;
  uint32_t header = word.load(std::memory_order_relaxed);
  for (;;) {
    if (chunk >= NumChunksOf(header)) return AcquireResult::kBadIndex;
    if (StateOf(header, chunk) != ChunkState::kComplete) return AcquireResult::kNotComplete;
    // acquire: pairs with the producer's release in MarkChunkComplete.
    if (word.compare_exchange_weak(header, WithState(header, chunk, ChunkState::kBeingRead),
                                   std::memory_order_acquire, std::memory_order_relaxed)) {
      *layout = LayoutOf(header);
      return AcquireResult::kOk;
    }
  }
}

void SharedMemoryAbi::ReleaseChunkAsFree(uint32_t page, uint32_t chunk) {
  if (page >= num_pages_ || chunk >= kMaxChunksPerPage) return;
  std::atomic<uint32_t>& word = page_header(page)->header_bitmap;
  uint32_t header = word.load(std::memory_order_relaxed);
  for (;;) {
    if (StateOf(header, chunk) != ChunkState::kBeingRead) return;  // Not ours.
    uint32_t desired = WithState(header, chunk, ChunkState::kFree);
    if ((desired & PageHeader::kAllStatesMask) == 0) desired = 0;  // Page free again.
    // release: pairs with the producer's acquire when it next takes this chunk
    // or partitions the page: our reads of the chunk happen before its writes.
    if (word.compare_exchange_weak(header, desired, std::memory_order_release,
                                   std::memory_order_relaxed))
      return;
  }
}

}  // namespace sluice
