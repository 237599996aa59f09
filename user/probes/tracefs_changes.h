// TracefsChanges: what one FtraceSettings changed in one tracefs instance,
// with the values it found there, so that the changes can be undone: by the
// controller itself when its trace ends, or, when its process died (SIGKILL,
// a crash), by another process reading the state file FtraceSettings kept
// (user/probes/tracefs_state_file.h, user/probes/tracefs_cleanup.h). Both
// paths undo with the same two functions below.
//
//   change                        recorded                        undone by
//   ───────────────────────────   ─────────────────────────────   ──────────────────────
//   mkdir instances/<name>        created_instance                the owner (rmdir)
//   buffer_size_kb                size(s) found, size read back   UndoSettingChanges
//   trace_clock                   clock found, clock set          UndoSettingChanges
//   buffer_percent                percent found, percent set      UndoSettingChanges
//   events/<g>/<n>/enable = 1     each event enabled              UndoEventChanges
//   kprobe_events += p:/r:<g>/<n> each probe the owner defined     UndoEventChanges (-:<g>/<n>)
//   tracing_on = 1                value found                     UndoSettingChanges
//   atrace --async_start          atrace's path                   UndoEventChanges
//
// A setting is put back only while it still holds the value that was set:
// if someone changed it since, theirs stays, and the report says so. A
// setting that already has the value found counts as restored. An event is
// disabled only if it was enabled by the owner of these changes (an event
// someone else enabled is never in the list) and is still enabled. When the
// current value cannot be read (or the value set was never recorded because
// the owner died between the two), the value found is written back.
//
// The undo functions remove from the struct what they restored, or left
// alone on purpose; what failed stays, so that saving the struct again
// keeps exactly what is still to undo.
#ifndef SLUICE_USER_PROBES_TRACEFS_CHANGES_H_
#define SLUICE_USER_PROBES_TRACEFS_CHANGES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "shm/base/subprocess.h"
#include "user/probes/tracefs.h"

namespace sluice {

struct TracefsChanges {
  std::string tracefs_root;       // The mount point (Tracefs::root()).
  std::string instance_name;      // "" = the root instance.
  bool created_instance = false;  // Made by the owner: rmdir it at the end.

  // tracing_on: set when the owner switched it (always 0 -> 1).
  std::optional<bool> tracing_on_found;
  // trace_clock: the clock found and the one selected instead.
  std::optional<std::string> trace_clock_found;
  std::string trace_clock_set;
  // buffer_size_kb: the uniform size found, or each CPU's when the sizes
  // differed ("X"); and the size the kernel showed after the write (0 when
  // not known: the owner died between writing and reading back).
  std::optional<uint32_t> buffer_size_kb_found;
  std::vector<std::pair<uint32_t, uint32_t>> per_cpu_buffer_size_kb_found;  // (cpu, kb)
  uint32_t buffer_size_kb_set = 0;
  // buffer_percent (the readers' wake-up watermark): the value found and the
  // one written.
  std::optional<uint32_t> buffer_percent_found;
  uint32_t buffer_percent_set = 0;

  std::vector<std::string> enabled_events;  // "group/name"
  // kprobes and kretprobes the owner defined in <root>/kprobe_events
  // ("sluice_kprobes/do_sys_openat2"); removed after their events are off.
  std::vector<std::string> created_kprobes;
  std::string atrace_path;                  // Non-empty: atrace --async_start ran.

  bool changed_buffer_size() const {
    return buffer_size_kb_found.has_value() || !per_cpu_buffer_size_kb_found.empty();
  }
  // Nothing left to undo (the instance included).
  bool empty() const {
    return !created_instance && !tracing_on_found && !trace_clock_found &&
           !changed_buffer_size() && !buffer_percent_found && enabled_events.empty() &&
           created_kprobes.empty() && atrace_path.empty();
  }
  bool operator==(const TracefsChanges&) const = default;
};

// What an undo did, one short phrase each, for the log line that tells the
// user ("disabled 3 events, buffer_size_kb 2051 -> 1408").
struct TracefsUndoReport {
  std::vector<std::string> done;    // Put back.
  std::vector<std::string> left;    // Changed since by someone else: left as is.
  std::vector<std::string> errors;  // Failed (one line each, with the path).
  // done, then left, then errors, joined with ", "; "nothing to undo" if empty.
  std::string Summary() const;
};

// Disables the events in changes->enabled_events that are still enabled and
// stops atrace (through run_command) if it was started.
void UndoEventChanges(const Tracefs& fs, TracefsChanges* changes, const CommandRunner& run_command,
                      TracefsUndoReport* report);

// Puts back tracing_on, trace_clock, buffer_size_kb and buffer_percent (see the header
// comment). The instance (created_instance) is the caller's to remove, after
// the files it has open in it are closed.
void UndoSettingChanges(const Tracefs& fs, TracefsChanges* changes, TracefsUndoReport* report);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_TRACEFS_CHANGES_H_
