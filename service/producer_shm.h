// The shared memory buffer (SMB) a producer gets on connecting: made by the
// side that owns producers (TracingService, the guest's relay:
// service/producer_host.h), with the same sizing rules on both.
//
//  - The producer's own (ProducerOptions.producer_shm_fd: Perfetto SDK
//    producers): its page size is what it already writes in, so it is taken
//    as given or refused (4 to 64 KiB in 4 KiB steps), never rounded; its
//    size must be a whole number of pages up to max_size.
//  - Otherwise a new memfd: the page size hint rounded to 4 KiB steps within
//    [4, 64] KiB, the size hint within [min_size, max_size] and a whole
//    number of pages; 0 hints take the defaults.
#ifndef SLUICE_SERVICE_PRODUCER_SHM_H_
#define SLUICE_SERVICE_PRODUCER_SHM_H_

#include <cstdint>
#include <memory>

#include "service/service_endpoints.h"
#include "shm/base/status.h"
#include "shm/shared_memory.h"

namespace sluice {

struct ProducerShmLimits {
  uint32_t default_size = 256 * 1024;
  uint32_t min_size = 64 * 1024;
  uint32_t max_size = 32 * 1024 * 1024;
  uint32_t default_page_size = 4096;
};

// *page_size gets the SMB's page size.
StatusOr<std::unique_ptr<SharedMemory>> MakeProducerShm(const ProducerOptions& options,
                                                        const ProducerShmLimits& limits,
                                                        uint32_t* page_size);

}  // namespace sluice

#endif  // SLUICE_SERVICE_PRODUCER_SHM_H_
