// SharedMemory: the memfd region behind a producer's SMB.
//
// The service creates it (Create), seals it against shrinking so a producer
// cannot make the service fault by truncating it, and sends the fd over the
// producer socket; the producer maps the same fd (Attach). See docs/ABI.md.
#ifndef SLUICE_SHM_SHARED_MEMORY_H_
#define SLUICE_SHM_SHARED_MEMORY_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "shm/base/scoped_fd.h"
#include "shm/base/status.h"

namespace sluice {

class SharedMemory {
 public:
  // Creates a zero-filled region of `size` bytes (a multiple of the system
  // page size), sealed with F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL.
  static StatusOr<std::unique_ptr<SharedMemory>> Create(uint32_t size);
  // Maps `fd` (taking ownership). Fails unless the fd's size is
  // `expected_size`; 0 accepts any size up to 1 GiB.
  static StatusOr<std::unique_ptr<SharedMemory>> Attach(int fd, uint32_t expected_size);
  // The service's side of a region a producer created (Perfetto SDK
  // producers bring their own): maps a dup of `fd` (the caller keeps its
  // own), refusing one that is not a memfd sealed against shrinking (the
  // producer could truncate it and fault the service) or whose size is not
  // a positive multiple of `granule` up to `max_size`.
  static StatusOr<std::unique_ptr<SharedMemory>> AttachProducerMemory(int fd, uint32_t granule,
                                                                      uint32_t max_size);

  ~SharedMemory();
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;

  uint8_t* start() const { return start_; }
  uint32_t size() const { return size_; }
  int fd() const { return fd_.get(); }

  // The byte ranges [begin, end) of the region that were ever written
  // (lseek's SEEK_DATA and SEEK_HOLE on the memfd; pages swapped out count
  // as written); the rest are holes and read as zeros. Reading a hole
  // through the mapping would allocate its page, so a scan of the region's
  // page headers (the service's scrape) reads only these. The whole region
  // when the kernel cannot say.
  std::vector<std::pair<uint32_t, uint32_t>> WrittenRanges() const;

  // The pages (of `page_size` bytes, `num_pages` of them: the SMB's layout)
  // whose first byte was ever written, from WrittenRanges(). A page's header
  // is its first word, set before any of its chunks, so only these can hold
  // a chunk: a scan of the SMB for chunks left behind reads only them.
  std::vector<uint32_t> PagesEverWritten(uint32_t page_size, uint32_t num_pages) const;

 private:
  SharedMemory(ScopedFd fd, uint8_t* start, uint32_t size)
      : fd_(std::move(fd)), start_(start), size_(size) {}
  ScopedFd fd_;  // Closed after the destructor unmaps.
  uint8_t* start_;
  uint32_t size_;
};

}  // namespace sluice

#endif  // SLUICE_SHM_SHARED_MEMORY_H_
