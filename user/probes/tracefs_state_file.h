// Tracefs state files: what a process has changed in tracefs and not yet put
// back, kept on disk so that another process can put it back if the owner
// dies without doing so (SIGKILL, a crash, the OOM killer). The cleanup that
// reads them is in user/probes/tracefs_cleanup.h; docs/FTRACE_CONTROL.md
// ("When the probes die") describes the whole mechanism.
//
// One file per FtraceSettings (one linux.ftrace instance), in a state
// directory (`sluice-probes --state-dir`, default /run/sluice/tracefs-state:
// /run is a tmpfs, so the files go away with the tracefs state they describe
// at reboot). The controller saves the file *before* each change it makes
// (the value found is on disk before the new one is in the kernel) and again
// after each undo; when nothing is left to undo the file is removed. A process
// killed at any moment therefore leaves a file that lists every change it
// made, and perhaps one it was about to make (undoing that one writes back
// the value the setting still has).
//
// Name: tracefs-<pid>-<start time>-<n>.state, written as <name>.tmp and
// renamed (shm/base/file_util.h WriteFileAtomically), so a reader sees a whole
// file. Format: text, one "key value" per line, in this order; keys after
// `created_boot_ns` appear only when that change was made, the repeated ones
// once per item; `end` closes a whole file.
//
//   sluice-tracefs-state 1           format version
//   owner_pid 4242                   the process that made the changes ...
//   owner_start_time 813255          ... its start time (/proc/<pid>/stat field 22)
//   owner_boot_id ac1e8864-...       ... and the boot (/proc/sys/kernel/random/boot_id)
//   owner_name sluice-probes         for messages
//   created_boot_ns 81325500000      CLOCK_BOOTTIME when the changes began (undo order)
//   tracefs_root /sys/kernel/tracing
//   instance sluice                  absent: the root instance
//   created_instance 1
//   tracing_on_found 0
//   trace_clock_found local
//   trace_clock_set boot
//   buffer_size_kb_found 1408        or, when CPUs differed, one line per CPU:
//   buffer_size_kb_found_cpu 0 1408
//   buffer_size_kb_set 2051
//   buffer_percent_found 50
//   buffer_percent_set 25
//   enabled_event sched/sched_switch
//   atrace_path /system/bin/atrace
//   end
//
// Parsing is strict (unknown keys, repeated keys, bad names and numbers, a
// missing `end` are errors naming the line): a file that does not parse is
// never acted on. Names are checked so that a damaged file cannot make the
// cleanup write outside tracefs: the root is an absolute path without "..",
// the instance a plain directory name, events group/name of [A-Za-z0-9_-].
#ifndef SLUICE_USER_PROBES_TRACEFS_STATE_FILE_H_
#define SLUICE_USER_PROBES_TRACEFS_STATE_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "shm/base/process_identity.h"
#include "shm/base/status.h"
#include "user/probes/tracefs_changes.h"

namespace sluice {

inline constexpr char kDefaultTracefsStateDir[] = "/run/sluice/tracefs-state";

// One file's contents.
struct TracefsState {
  ProcessIdentity owner;
  std::string owner_name;
  uint64_t created_boot_ns = 0;
  TracefsChanges changes;
  bool operator==(const TracefsState&) const = default;
};

std::string EncodeTracefsState(const TracefsState& state);
StatusOr<TracefsState> ParseTracefsState(std::string_view text);

// Reads and parses one state file; errors name the file.
StatusOr<TracefsState> ReadTracefsStateFile(const std::string& path);
// Writes one atomically (removing it instead when nothing is left to undo).
Status WriteTracefsStateFile(const std::string& path, const TracefsState& state);

// Creates `dir` (and its parents) mode 0700 if missing; refuses a directory
// that is not owned by this user or that others may write to (anyone who can
// write a state file can have the cleanup write to tracefs).
Status PrepareTracefsStateDir(const std::string& dir);
// The same checks on an existing directory, without creating anything.
Status CheckTracefsStateDir(const std::string& dir);

// The state file of one FtraceSettings of this process. Nothing is written
// until the first Save().
class TracefsStateFile {
 public:
  // Fails if this process cannot be identified (/proc not mounted).
  static StatusOr<std::unique_ptr<TracefsStateFile>> Create(const std::string& dir);

  // Writes `changes` (creating the directory on first use), or removes the
  // file when `changes` is empty.
  Status Save(const TracefsChanges& changes);
  const std::string& path() const { return path_; }

 private:
  TracefsStateFile(std::string dir, std::string path, TracefsState state)
      : dir_(std::move(dir)), path_(std::move(path)), state_(std::move(state)) {}

  std::string dir_;
  std::string path_;
  TracefsState state_;
  bool dir_ready_ = false;
};

// Whether `name` is a state file's name, and its owner's pid and start time
// (also for a leftover <name>.tmp, with `tmp` set).
bool ParseTracefsStateFileName(std::string_view name, uint32_t* pid, uint64_t* start_time,
                               bool* tmp);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_TRACEFS_STATE_FILE_H_
