// The open-files limit, raised to what the process may have. A recorder
// holds a few fds per CPU (trace_pipe_raw, a splice pipe, a wake-up eventfd:
// four per CPU on the splice path), sluiced one per producer and consumer:
// at 256 CPUs that is over a thousand, past the soft limit of 1024 that
// many systems start processes with. The hard limit is usually far higher
// (systemd: 524288), and sluice polls with poll(2) and epoll, never
// select(2), so fds above 1023 are fine.
#ifndef SLUICE_SHM_BASE_OPEN_FILES_LIMIT_H_
#define SLUICE_SHM_BASE_OPEN_FILES_LIMIT_H_

#include <cstdint>

namespace sluice {

// Sets RLIMIT_NOFILE's soft limit to its hard limit; returns the soft limit
// now in force (the old one if it could not be raised).
uint64_t RaiseOpenFilesLimit();

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_OPEN_FILES_LIMIT_H_
