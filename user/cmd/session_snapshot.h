// A snapshot of a running session written to a file: what `sluice clone`
// does, and what `sluice record` does for each CLONE_SNAPSHOT trigger. A
// consumer connection of its own asks sluiced to clone the session (it
// flushes the session's producers, then copies its buffers), reads the copy
// into FILE's temporary file and renames it over FILE once whole.
#ifndef SLUICE_USER_CMD_SESSION_SNAPSHOT_H_
#define SLUICE_USER_CMD_SESSION_SNAPSHOT_H_

#include <cstdint>
#include <string>

#include "shm/base/status.h"

namespace sluice {

struct SessionSnapshot {
  uint64_t source_id = 0;    // The session cloned.
  bool flushed = false;      // Every producer answered the flush first.
  uint64_t bytes = 0;        // The snapshot file's size.
  std::string display_name;  // FILE, or "standard output" for -.
  bool to_stdout = false;
};

// Clones the session `key` through sluiced's consumer socket `socket` into
// `path` (- for standard output). Nothing at `path` changes on an error.
StatusOr<SessionSnapshot> WriteSessionSnapshot(const std::string& socket, const std::string& key,
                                               const std::string& path);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_SESSION_SNAPSHOT_H_
