#include "shm/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "shm/base/errno_message.h"

namespace sluice {
namespace {
constexpr uint32_t kMaxAttachSize = 1u << 30;
}  // namespace

std::vector<std::pair<uint32_t, uint32_t>> SharedMemory::WrittenRanges() const {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  off_t pos = 0;
  while (pos < static_cast<off_t>(size_)) {
    const off_t data = lseek(fd_.get(), pos, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;  // Holes to the end.
      return {{0, size_}};        // Cannot say: all of it.
    }
    if (data >= static_cast<off_t>(size_)) break;
    off_t hole = lseek(fd_.get(), data, SEEK_HOLE);
    if (hole < 0) return {{0, size_}};
    hole = std::min<off_t>(hole, size_);
    ranges.emplace_back(static_cast<uint32_t>(data), static_cast<uint32_t>(hole));
    pos = hole;
  }
  return ranges;
}

std::vector<uint32_t> SharedMemory::PagesEverWritten(uint32_t page_size, uint32_t num_pages) const {
  std::vector<uint32_t> pages;
  if (page_size == 0) return pages;
  for (const auto& [begin, end] : WrittenRanges()) {
    const uint32_t first = (begin + page_size - 1) / page_size;
    const uint32_t last = std::min(num_pages, (end + page_size - 1) / page_size);
    for (uint32_t page = first; page < last; page++) pages.push_back(page);
  }
  return pages;
}

StatusOr<std::unique_ptr<SharedMemory>> SharedMemory::Create(uint32_t size) {
  long sys_page = sysconf(_SC_PAGESIZE);
  if (size == 0 || size % static_cast<uint32_t>(sys_page) != 0)
    return Status::Error("shared memory size " + std::to_string(size) +
                         " is not a positive multiple of the page size");
  ScopedFd fd(memfd_create("sluice-smb", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return Status::Error(WithErrno("memfd_create failed (kernel needs CONFIG_MEMFD_CREATE)", errno));
  if (ftruncate(fd.get(), size) != 0) {
    return Status::Error(WithErrno("ftruncate of the shared memory failed", errno));
  }
  // A producer must not be able to shrink the file under the service's
  // mapping (that would SIGBUS the service).
  if (fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return Status::Error(WithErrno("sealing the shared memory failed", errno));
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) {
    return Status::Error(WithErrno("mmap of the shared memory failed", errno));
  }
  return std::unique_ptr<SharedMemory>(new SharedMemory(std::move(fd), static_cast<uint8_t*>(p), size));
}

StatusOr<std::unique_ptr<SharedMemory>> SharedMemory::Attach(int raw_fd, uint32_t expected_size) {
  ScopedFd fd(raw_fd);
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return Status::Error(WithErrno("fstat of the shared memory fd failed", errno));
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == 0 || size > kMaxAttachSize || (expected_size != 0 && size != expected_size)) {
    return Status::Error("shared memory fd has size " + std::to_string(size) + ", expected " +
                         std::to_string(expected_size));
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED) {
    return Status::Error(WithErrno("mmap of the shared memory fd failed", errno));
  }
  return std::unique_ptr<SharedMemory>(
      new SharedMemory(std::move(fd), static_cast<uint8_t*>(p), static_cast<uint32_t>(size)));
}

StatusOr<std::unique_ptr<SharedMemory>> SharedMemory::AttachProducerMemory(int raw_fd,
                                                                          uint32_t granule,
                                                                          uint32_t max_size) {
  ScopedFd fd(fcntl(raw_fd, F_DUPFD_CLOEXEC, 0));
  if (!fd.valid()) return Status::Error(WithErrno("cannot dup the producer's shared memory fd", errno));
  const int seals = fcntl(fd.get(), F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_SHRINK))
    return Status::Error(
        "the producer's shared memory is not a memfd sealed against shrinking (F_SEAL_SHRINK): "
        "a producer could fault the service by truncating it; let the service create it");
  struct stat st;
  if (fstat(fd.get(), &st) != 0)
    return Status::Error(WithErrno("fstat of the producer's shared memory failed", errno));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (granule == 0 || size == 0 || size % granule != 0 || size > max_size)
    return Status::Error("the producer's shared memory has " + std::to_string(size) +
                         " bytes: not a whole number of " + std::to_string(granule) +
                         "-byte pages up to " + std::to_string(max_size));
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (p == MAP_FAILED)
    return Status::Error(WithErrno("mmap of the producer's shared memory failed", errno));
  return std::unique_ptr<SharedMemory>(
      new SharedMemory(std::move(fd), static_cast<uint8_t*>(p), static_cast<uint32_t>(size)));
}

SharedMemory::~SharedMemory() {
  if (start_) munmap(start_, size_);
}

}  // namespace sluice
