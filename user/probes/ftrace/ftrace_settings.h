// FtraceSettings: turns an ftrace config into tracefs settings, and puts
// them back when the trace ends.
//
// What Start() changes, in this order, and what Restore() puts back:
//
//   setting           Start()                                  Restore()
//   ───────────────   ──────────────────────────────────────   ─────────────────────────────
//   buffer_size_kb    config value per CPU, if set and differs  the old size (per CPU if the
//                                                              sizes differed: "X")
//   trace_clock       "boot" if the kernel has it and differs   the old clock
//   buffer_percent    config value, if set and differs          the old value
//   buffer contents   emptied (unless preserve_buffer), always  -- (consumed by the reader)
//   kprobe_events     "p:sluice_kprobes/F F" (and "r..." for a  "-:sluice_kprobes/F" for each
//                     return) per configured kprobe not         probe defined here, once its
//                     defined yet                               events are off (Restore())
//   events/*/enable   "1" for each requested event that is     "0" for exactly those events
//                     not enabled yet                          (DisableEvents())
//   tracing_on        "1" if it was "0"                        "0" if it was "0"
//   atrace (Android)  atrace --async_start                     atrace --async_stop
//
// Other users' settings are left alone: an event someone else enabled stays
// enabled when we stop (we never wrote it, so we never clear it). Settings we
// did not change are not written back, so a concurrent change by another tool
// to those survives; a setting we changed is put back only while it still has
// our value (user/probes/tracefs_changes.h, which also does the undoing).
//
// State file. With FtraceSettingsOptions.state_file set, every change is
// saved there before it is made, and the file is rewritten after each undo
// (user/probes/tracefs_state_file.h), so that if this process dies without
// Restore() another one puts tracefs back (user/probes/tracefs_cleanup.h).
// The events about to be enabled are saved as one batch before the first
// write: if the process dies during that loop, the cleanup may find an event
// listed that it never enabled, and disables it if it is on (someone else
// enabled it in those microseconds). A file that cannot be written is one
// warning; the trace goes on. Two kernel effects cannot be undone and are documented
// rather than hidden: changing trace_clock clears the buffer (Start() empties
// it anyway, whatever it changed: see EmptyBuffer()), and
// the root buffer's one-way expansion ("7 (expanded: 1408)") happens as soon
// as any event is enabled. Kernels before 6.6 keep one expansion flag for
// all instances and set it when an instance is resized: a never-used root buffer
// then stays at its boot size for good; resizing an instance expands such a
// root to the size it was waiting for, as its first event would have.
//
// Why boot clock: the BPF data source timestamps with bpf_ktime_get_boot_ns(),
// so both sources interleave in one timeline and match Perfetto's default
// trace clock (CLOCK_BOOTTIME). Where "boot" is missing (before 4.10 it was
// unavailable), the current clock is kept and reported via trace_clock().
//
// Event names: "group/name", "group/*" (every event of the group) or "name"
// (every group that has an event of that name; normally one). They resolve
// against <root>/available_events; names that match nothing are
// unknown_events(), events whose enable write fails are failed_events(); both
// are skipped and reported in FtraceStats. The "ftrace" group's events
// (ftrace/print, which trace_marker writes produce) are not in
// available_events and have no enable file: they are always on while
// tracing_on is 1, so they count as active without being enabled (and
// DisableEvents() cannot stop trace_marker writes from landing).
//
// atrace: Android's userspace tracing is switched on by /system/bin/atrace.
// There we run `atrace --async_start --only_userspace [-a apps] cats...`
// (kernel events for the categories are enabled by us, from a small table, so
// atrace never touches tracing_on or the clock) and `--async_stop` at the end.
// Elsewhere atrace does not exist: one warning, and only ftrace/print (what
// trace_marker writes produce) is enabled for the categories.
//
// Thread-safety: one thread calls it, but SetBufferPercent() may come from
// another while the trace runs (the data source's drain thread); a mutex
// serializes it with DisableEvents(), Restore() and OnInstanceRemoved(),
// which also change what is saved in the state file.
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_CONTROLLER_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_CONTROLLER_H_

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "shm/base/status.h"
#include "shm/base/subprocess.h"
#include "user/probes/tracefs.h"
#include "user/probes/tracefs_changes.h"

namespace sluice {

class TracefsStateFile;

// A kprobe the config asks for (FtraceConfig.kprobe_events): on the
// function's entry (a kprobe in group sluice_kprobes), its return (a
// kretprobe in sluice_kretprobes), or both. The translator writes their hits
// as KprobeEvent (ftrace_event_translator.h).
struct FtraceKprobe {
  std::string function;
  bool entry = false;
  bool exit = false;
};
inline constexpr char kKprobeGroup[] = "sluice_kprobes";
inline constexpr char kKretprobeGroup[] = "sluice_kretprobes";

struct FtraceSettingsConfig {
  std::vector<std::string> events;  // As in FtraceConfig.ftrace_events.
  std::vector<FtraceKprobe> kprobes;
  std::vector<std::string> atrace_categories;
  std::vector<std::string> atrace_apps;
  uint32_t buffer_size_kb = 0;  // Per CPU; 0 = leave the kernel's size.
  bool preserve_buffer = false;  // Keep events already in the buffer.
  bool boot_clock = true;        // Switch trace_clock to "boot" if available.
  // buffer_percent, the readers' wake-up watermark (FtraceConfig's
  // drain_buffer_percent), 1-100; 0 = leave the kernel's (50 by default).
  uint32_t buffer_percent = 0;
  // FtraceConfig.throttle_rss_stat: kmem/rss_stat becomes Android's
  // synthetic/rss_stat_throttled where the kernel has it.
  bool throttle_rss_stat = false;
  // FtraceConfig.disable_generic_events: events without a message of their
  // own (which would be written as GenericFtraceEvent) are left off, and
  // named in a warning.
  bool disable_generic_events = false;
};

struct FtraceSettingsOptions {
  // Whether this is Android (atrace exists); unset = detect (/system/bin/atrace
  // or ro.build props in /system/build.prop).
  std::optional<bool> is_android;
  std::string atrace_path = "/system/bin/atrace";
  // Runs argv, returns its exit status (-1 if it could not run) and its
  // output in `output`. Unset = fork/exec. Tests substitute a fake.
  CommandRunner run_command;
  // Print warnings (atrace missing, failed events) to stderr once.
  bool print_warnings = true;
  // Where to save what Start() changes before changing it (see the header
  // comment); null = nowhere. Must outlive the settings.
  TracefsStateFile* state_file = nullptr;
};

// FtraceClock enum values of FtraceEventBundle (upstream ftrace_event_bundle.proto).
// 0 (unspecified) means the boot clock, which is the default.
uint32_t FtraceClockEnumForTraceClock(std::string_view clock);

// Resolves requested event names (see header comment) against `available`
// ("group/name"). `resolved` gets unique "group/name" entries in request
// order; names matching nothing go to `unknown`.
void ResolveFtraceEvents(const std::vector<std::string>& requested,
                         const std::vector<std::string>& available,
                         std::vector<std::string>* resolved, std::vector<std::string>* unknown);

class FtraceSettings {
 public:
  // `tracefs` must outlive the settings.
  FtraceSettings(const Tracefs* tracefs, FtraceSettingsConfig config,
                   FtraceSettingsOptions options = {});
  FtraceSettings(const FtraceSettings&) = delete;
  FtraceSettings& operator=(const FtraceSettings&) = delete;
  // Restores if Start() ran and Restore() did not.
  ~FtraceSettings();

  // Applies the config. On error, whatever was already changed is restored.
  Status Start();
  // Disables the events Start() enabled and stops atrace. Idempotent. Call it
  // before the final drain so nothing new arrives while draining.
  void DisableEvents();
  // DisableEvents(), then puts back tracing_on, trace_clock, buffer size and
  // buffer_percent.
  // Idempotent. Errors are collected in restore_errors().
  void Restore();
  // The owner removed the instance the Tracefs created: the state file stops
  // listing it (and is removed when nothing else is left).
  void OnInstanceRemoved();
  // Changes buffer_percent while the trace runs (the data source lowers
  // the readers' watermark for a buffer that fills fast), saved first and
  // put back by Restore() like the rest. An error if the kernel has no
  // buffer_percent or the write fails; does nothing after Restore().
  Status SetBufferPercent(uint32_t percent);

  // Requested events that are enabled for this trace ("group/name"), whether
  // we enabled them or they already were.
  const std::vector<std::string>& active_events() const { return active_events_; }
  // The subset of active_events() that Start() enabled.
  const std::vector<std::string>& enabled_by_us() const { return enabled_by_us_; }
  const std::vector<std::string>& unknown_events() const { return unknown_events_; }
  const std::vector<std::string>& failed_events() const { return failed_events_; }
  // Events disable_generic_events left off (no message of their own).
  const std::vector<std::string>& generic_events_left_off() const { return generic_events_left_off_; }
  // Probes whose definition failed (no such function, no kprobes in this
  // kernel), as "function": reported in FtraceStats with the failed events.
  const std::vector<std::string>& failed_kprobes() const { return failed_kprobes_; }
  const std::string& atrace_errors() const { return atrace_errors_; }
  const std::vector<std::string>& restore_errors() const { return restore_report_.errors; }
  // What DisableEvents() and Restore() put back ("disabled 3 events, ...").
  const TracefsUndoReport& restore_report() const { return restore_report_; }
  // What is still changed (empty after a clean Restore(), but for an instance
  // the owner has not removed yet).
  const TracefsChanges& changes() const { return changes_; }
  // Why the state file could not be written; empty if it could (or none).
  const std::string& state_file_error() const { return state_file_error_; }
  // The trace_clock in effect during the trace, and its FtraceClock value.
  const std::string& trace_clock() const { return trace_clock_; }
  uint32_t ftrace_clock_enum() const { return FtraceClockEnumForTraceClock(trace_clock_); }
  bool is_android() const { return is_android_; }

 private:
  Status ApplyConfig();
  StatusOr<std::vector<std::string>> ResolveEvents(bool wants_atrace);
  // Defines the config's kprobes that do not exist yet; the events of all
  // of them ("sluice_kprobes/F") join the requested ones.
  void DefineKprobes();
  Status ApplyBufferSize(const TracefsBufferSize& found);
  void ExpandRootLeftAtItsBootSize(const TracefsBufferSize& root_found);
  Status ApplyClock(const std::string& found);
  Status ApplyBufferPercent();
  Status EmptyBuffer();
  Status WriteBufferPercent(uint32_t percent);
  void DisableEventsLocked();
  // Saves changes_ to the state file, if there is one.
  void Persist();
  void EnableEvents(const std::vector<std::string>& resolved);
  void StartAtrace();
  void Warn(const std::string& message);
  int RunCommand(const std::vector<std::string>& argv, std::string* output);

  const Tracefs* tracefs_;
  std::mutex mutex_;  // See the header comment.
  FtraceSettingsConfig config_;
  FtraceSettingsOptions options_;
  bool is_android_ = false;

  bool started_ = false;
  bool restored_ = false;
  bool events_disabled_ = false;

  // What Start() changed and has not been undone yet, with the values found.
  TracefsChanges changes_;
  TracefsUndoReport restore_report_;
  std::string state_file_error_;

  std::string trace_clock_;
  std::vector<std::string> always_on_;  // "ftrace/print" & co: no enable file.
  std::vector<std::string> active_events_;
  std::vector<std::string> enabled_by_us_;
  std::vector<std::string> unknown_events_;
  std::vector<std::string> failed_events_;
  std::vector<std::string> generic_events_left_off_;
  std::vector<std::string> failed_kprobes_;
  std::vector<std::string> kprobe_events_;  // "sluice_kprobes/F": resolved with the config's events
  std::string atrace_errors_;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_CONTROLLER_H_
