// FtraceController: turns an ftrace config into tracefs settings, and puts
// them back when the trace ends.
//
// What Start() changes, in this order, and what Restore() puts back:
//
//   setting           Start()                                  Restore()
//   ───────────────   ──────────────────────────────────────   ─────────────────────────────
//   buffer_size_kb    config value per CPU, if set and differs  the old size (per CPU if the
//                                                              sizes differed: "X")
//   trace_clock       "boot" if the kernel has it and differs   the old clock
//   buffer contents   cleared (unless preserve_buffer)         -- (consumed by the reader)
//   events/*/enable   "1" for each requested event that is     "0" for exactly those events
//                     not enabled yet                          (DisableEvents())
//   tracing_on        "1" if it was "0"                        "0" if it was "0"
//   atrace (Android)  atrace --async_start                     atrace --async_stop
//
// Other users' settings are left alone: an event someone else enabled stays
// enabled when we stop (we never wrote it, so we never clear it). Settings we
// did not change are not written back, so a concurrent change by another tool
// to those survives. Two kernel effects cannot be undone and are documented
// rather than hidden: changing trace_clock or resizing clears the buffer, and
// the root buffer's one-way expansion ("7 (expanded: 1408)") happens as soon
// as any event is enabled.
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
// Thread-safety: none; the data source calls it from one thread.
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_CONTROLLER_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_CONTROLLER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "shm/base/status.h"
#include "shm/base/subprocess.h"
#include "user/probes/tracefs.h"

namespace sluice {

struct FtraceControlConfig {
  std::vector<std::string> events;  // As in FtraceConfig.ftrace_events.
  std::vector<std::string> atrace_categories;
  std::vector<std::string> atrace_apps;
  uint32_t buffer_size_kb = 0;  // Per CPU; 0 = leave the kernel's size.
  bool preserve_buffer = false;  // Keep events already in the buffer.
  bool boot_clock = true;        // Switch trace_clock to "boot" if available.
};

struct FtraceControlOptions {
  // Whether this is Android (atrace exists); unset = detect (/system/bin/atrace
  // or ro.build props in /system/build.prop).
  std::optional<bool> is_android;
  std::string atrace_path = "/system/bin/atrace";
  // Runs argv, returns its exit status (-1 if it could not run) and its
  // output in `output`. Unset = fork/exec. Tests substitute a fake.
  CommandRunner run_command;
  // Print warnings (atrace missing, failed events) to stderr once.
  bool print_warnings = true;
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

class FtraceController {
 public:
  // `tracefs` must outlive the controller.
  FtraceController(const Tracefs* tracefs, FtraceControlConfig config,
                   FtraceControlOptions options = {});
  FtraceController(const FtraceController&) = delete;
  FtraceController& operator=(const FtraceController&) = delete;
  // Restores if Start() ran and Restore() did not.
  ~FtraceController();

  // Applies the config. On error, whatever was already changed is restored.
  Status Start();
  // Disables the events Start() enabled and stops atrace. Idempotent. Call it
  // before the final drain so nothing new arrives while draining.
  void DisableEvents();
  // DisableEvents(), then puts back tracing_on, trace_clock and buffer size.
  // Idempotent. Errors are collected in restore_errors().
  void Restore();

  // Requested events that are enabled for this trace ("group/name"), whether
  // we enabled them or they already were.
  const std::vector<std::string>& active_events() const { return active_events_; }
  // The subset of active_events() that Start() enabled.
  const std::vector<std::string>& enabled_by_us() const { return enabled_by_us_; }
  const std::vector<std::string>& unknown_events() const { return unknown_events_; }
  const std::vector<std::string>& failed_events() const { return failed_events_; }
  const std::string& atrace_errors() const { return atrace_errors_; }
  const std::vector<std::string>& restore_errors() const { return restore_errors_; }
  // The trace_clock in effect during the trace, and its FtraceClock value.
  const std::string& trace_clock() const { return trace_clock_; }
  uint32_t ftrace_clock_enum() const { return FtraceClockEnumForTraceClock(trace_clock_); }
  bool is_android() const { return is_android_; }

 private:
  Status ApplyConfig();
  StatusOr<std::vector<std::string>> ResolveEvents(bool wants_atrace);
  Status ApplyBufferSize();
  Status ApplyClock();
  void EnableEvents(const std::vector<std::string>& resolved);
  void StartAtrace();
  void StopAtrace();
  void Warn(const std::string& message);
  int RunCommand(const std::vector<std::string>& argv, std::string* output);

  const Tracefs* tracefs_;
  FtraceControlConfig config_;
  FtraceControlOptions options_;
  bool is_android_ = false;

  bool started_ = false;
  bool restored_ = false;
  bool events_disabled_ = false;
  bool atrace_running_ = false;

  // Saved state; `changed_*` says whether Restore() must write it back.
  bool saved_tracing_on_ = true;
  bool changed_tracing_on_ = false;
  std::string saved_clock_;
  bool changed_clock_ = false;
  TracefsBufferSize saved_buffer_size_;
  std::vector<std::pair<uint32_t, uint32_t>> saved_per_cpu_kb_;  // (cpu, kb) for "X"
  bool changed_buffer_size_ = false;

  std::string trace_clock_;
  std::vector<std::string> always_on_;  // "ftrace/print" & co: no enable file.
  std::vector<std::string> active_events_;
  std::vector<std::string> enabled_by_us_;
  std::vector<std::string> unknown_events_;
  std::vector<std::string> failed_events_;
  std::string atrace_errors_;
  std::vector<std::string> restore_errors_;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_CONTROLLER_H_
