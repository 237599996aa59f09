// RestoreTracefsLeftByDeadOwners: puts back what processes that died left
// changed in tracefs, from their state files (user/probes/tracefs_state_file.h).
// Run by `sluice-probes` at startup and by `sluice-probes --cleanup` (the
// systemd unit's ExecStopPost), and by every ProbesProducer before it
// registers its data sources, so also by the next in-process `sluice record`.
//
// Each state file in the directory, under an exclusive flock of <dir>/.lock
// (two cleanups never undo the same file), is:
//
//   does not parse            reported; left in place; nothing undone
//   owner from another boot   removed (the reboot reset tracefs)
//   owner running             left alone (reported in `running`)
//   owner gone, but a running process began changing the same tracefs
//   instance after it         kept for later (`deferred`): undoing it now would
//                             pull the settings the running one found from
//                             under its trace; the running one puts back what
//                             it found when it ends, and the next cleanup (the
//                             next sluice-probes start, sluice-probes --cleanup)
//                             undoes this one
//   owner gone                undone with UndoEventChanges, UndoSettingChanges
//                             (user/probes/tracefs_changes.h) and rmdir of an
//                             instance it created, newest first (changes
//                             stacked by several dead processes unwind in
//                             reverse order); the file is removed, or
//                             rewritten with what could not be undone
//
// Leftover <name>.tmp files of gone owners are removed. A directory that
// others may write to is refused (a state file makes the cleanup write to
// tracefs). A missing directory means nothing to do.
#ifndef SLUICE_USER_PROBES_TRACEFS_CLEANUP_H_
#define SLUICE_USER_PROBES_TRACEFS_CLEANUP_H_

#include <string>
#include <vector>

#include "shm/base/subprocess.h"

namespace sluice {

struct TracefsCleanupOptions {
  // Runs atrace --async_stop for owners that started atrace; unset = spawn.
  CommandRunner run_command;
};

// One line per state file, for the log.
struct TracefsCleanupReport {
  // "restored tracefs left by sluice-probes pid 42 (no longer running) in
  // /sys/kernel/tracing: disabled 3 events, tracing_on 1 -> 0, trace_clock
  // boot -> local, buffer_size_kb 2051 -> 1408; its ring buffer held 1234
  // events nobody had read (lost)"
  std::vector<std::string> restored;
  std::vector<std::string> deferred;
  std::vector<std::string> running;  // Owners still running: not touched.
  std::vector<std::string> errors;   // Unparsable files, failed undos.
  bool ok() const { return errors.empty(); }
};

TracefsCleanupReport RestoreTracefsLeftByDeadOwners(const std::string& state_dir,
                                                    const TracefsCleanupOptions& options = {});

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_TRACEFS_CLEANUP_H_
