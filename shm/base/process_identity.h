// ProcessIdentity: a process named so that its record outlives it. A pid
// alone is reused; the pid with its start time (field 22 of /proc/<pid>/stat,
// clock ticks after boot) names one process of one boot, and the boot id
// (/proc/sys/kernel/random/boot_id) names the boot. Used by the tracefs state
// files (user/probes/tracefs_state_file.h) to tell whether the process that
// changed tracefs still runs.
#ifndef SLUICE_SHM_BASE_PROCESS_IDENTITY_H_
#define SLUICE_SHM_BASE_PROCESS_IDENTITY_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "shm/base/status.h"

namespace sluice {

struct ProcessIdentity {
  uint32_t pid = 0;
  uint64_t start_time = 0;  // Clock ticks after boot (/proc/<pid>/stat field 22).
  std::string boot_id;
  bool operator==(const ProcessIdentity&) const = default;
};

// The fields of /proc/<pid>/stat that ProcessIdentity needs. The command name
// (field 2) may hold spaces and ')': the fields are read after the last ')'.
struct ProcStat {
  char state = '?';  // R, S, D, Z (zombie), X (dead), ...
  uint64_t start_time = 0;
};
StatusOr<ProcStat> ParseProcStat(std::string_view text);

// The identity of a running process (this one: getpid()). `proc` is the
// procfs mount point (tests use a fake tree).
StatusOr<ProcessIdentity> ReadProcessIdentity(pid_t pid, const std::string& proc = "/proc");

// Whether the process `id` names still runs: same boot, same pid with the same
// start time, and not a zombie (a zombie has closed its files and will never
// run again).
bool IsProcessRunning(const ProcessIdentity& id, const std::string& proc = "/proc");

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_PROCESS_IDENTITY_H_
