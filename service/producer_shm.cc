#include "service/producer_shm.h"

#include <algorithm>
#include <string>

#include "shm/shm_abi.h"

namespace sluice {

StatusOr<std::unique_ptr<SharedMemory>> MakeProducerShm(const ProducerOptions& options,
                                                        const ProducerShmLimits& limits,
                                                        uint32_t* page_size) {
  if (options.producer_shm_fd >= 0) {
    const uint32_t page = options.shm_page_size_hint_bytes;
    if (page < kMinPageSize || page > kMaxPageSize || page % kPageSizeStep != 0)
      return Status::Error("the producer's shared memory page size " + std::to_string(page) +
                           " is not 4 to 64 KiB in 4 KiB steps");
    *page_size = page;
    return SharedMemory::AttachProducerMemory(options.producer_shm_fd, page, limits.max_size);
  }
  uint32_t page = options.shm_page_size_hint_bytes ? options.shm_page_size_hint_bytes
                                                   : limits.default_page_size;
  page = std::clamp(page, kMinPageSize, kMaxPageSize);
  page = (page + kPageSizeStep - 1) / kPageSizeStep * kPageSizeStep;
  uint64_t size = options.shm_size_hint_bytes ? options.shm_size_hint_bytes : limits.default_size;
  size = std::clamp<uint64_t>(size, limits.min_size, limits.max_size);
  size = (size + page - 1) / page * page;
  if (size > limits.max_size) size = limits.max_size / page * page;
  if (size < page) size = page;
  *page_size = page;
  return SharedMemory::Create(static_cast<uint32_t>(size));
}

}  // namespace sluice
