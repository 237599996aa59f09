#include "user/probes/ftrace/ftrace_settings.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <set>
#include <unordered_set>

#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "shm/base/scoped_fd.h"
#include "shm/base/string_util.h"
#include "shm/base/subprocess.h"
#include "user/probes/ftrace/atrace_categories.h"
#include "user/probes/ftrace/ftrace_event_translator.h"
#include "user/probes/tracefs_state_file.h"

namespace sluice {
namespace {

constexpr std::string_view kPrintEvent = "ftrace/print";
constexpr std::string_view kRssStat = "kmem/rss_stat";
constexpr std::string_view kRssStatThrottled = "synthetic/rss_stat_throttled";

bool DetectAndroid(const std::string& atrace_path) {
  if (access(atrace_path.c_str(), X_OK) == 0) return true;
  auto props = ReadFile("/system/build.prop");
  return props.ok() && props->find("ro.build.") != std::string::npos;
}

}  // namespace

uint32_t FtraceClockEnumForTraceClock(std::string_view clock) {
  if (clock == "boot" || clock.empty()) return perfetto::protos::FTRACE_CLOCK_UNSPECIFIED;
  if (clock == "global") return perfetto::protos::FTRACE_CLOCK_GLOBAL;
  if (clock == "local") return perfetto::protos::FTRACE_CLOCK_LOCAL;
  if (clock == "mono_raw") return perfetto::protos::FTRACE_CLOCK_MONO_RAW;
  return perfetto::protos::FTRACE_CLOCK_UNKNOWN;
}

void ResolveFtraceEvents(const std::vector<std::string>& requested,
                         const std::vector<std::string>& available,
                         std::vector<std::string>* resolved, std::vector<std::string>* unknown) {
  std::unordered_set<std::string> seen;
  auto add = [&](const std::string& e) {
    if (seen.insert(e).second) resolved->push_back(e);
  };
  for (const std::string& req : requested) {
    size_t slash = req.find('/');
    bool matched = false;
    if (slash == std::string::npos) {
      // "name": every group with an event of that name.
      for (const std::string& e : available) {
        size_t s = e.find('/');
        if (std::string_view(e).substr(s + 1) == req) {
          add(e);
          matched = true;
        }
      }
    } else if (std::string_view(req).substr(slash + 1) == "*") {
      const std::string_view group = std::string_view(req).substr(0, slash + 1);  // "grp/"
      for (const std::string& e : available) {
        if (std::string_view(e).substr(0, group.size()) == group) {
          add(e);
          matched = true;
        }
      }
    } else if (std::find(available.begin(), available.end(), req) != available.end()) {
      add(req);
      matched = true;
    }
    if (!matched && std::find(unknown->begin(), unknown->end(), req) == unknown->end()) {
      unknown->push_back(req);
    }
  }
}

FtraceSettings::FtraceSettings(const Tracefs* tracefs, FtraceSettingsConfig config,
                                   FtraceSettingsOptions options)
    : tracefs_(tracefs), config_(std::move(config)), options_(std::move(options)) {
  is_android_ = options_.is_android.has_value() ? *options_.is_android
                                                : DetectAndroid(options_.atrace_path);
  changes_.tracefs_root = tracefs_->root();
  changes_.instance_name = tracefs_->instance_name();
  changes_.created_instance = tracefs_->created_instance();
  Persist();  // The owner may have saved "creating the instance" before: correct it.
}

FtraceSettings::~FtraceSettings() {
  if (started_) Restore();
}

void FtraceSettings::Warn(const std::string& message) {
  if (options_.print_warnings) std::fprintf(stderr, "sluice: warning: %s\n", message.c_str());
}

void FtraceSettings::Persist() {
  if (options_.state_file == nullptr) return;
  Status st = options_.state_file->Save(changes_);
  if (st.ok() || !state_file_error_.empty()) return;
  state_file_error_ = "cannot keep the tracefs state file (" + st.message() +
                      "): if this process is killed, tracefs stays as it changed it";
  Warn(state_file_error_);
}

int FtraceSettings::RunCommand(const std::vector<std::string>& argv, std::string* output) {
  if (options_.run_command) return options_.run_command(argv, output);
  return RunCommandAndWait(argv, output);
}

Status FtraceSettings::Start() {
  if (started_) return Status::Error("FtraceSettings::Start called twice");
  started_ = true;
  Status status = ApplyConfig();
  if (!status.ok()) Restore();
  return status;
}

// The order matters: save first (Restore() undoes only what was saved and
// changed); size and clock reset the buffer, so they go before the events;
// tracing_on last.
Status FtraceSettings::ApplyConfig() {
  const Tracefs& fs = *tracefs_;
  SLUICE_ASSIGN_OR_RETURN(const bool found_tracing_on, fs.ReadTracingOn());
  SLUICE_ASSIGN_OR_RETURN(const std::string found_clock, fs.ReadTraceClock());
  SLUICE_ASSIGN_OR_RETURN(const TracefsBufferSize found_size, fs.ReadBufferSize());
  trace_clock_ = found_clock;

  const bool wants_atrace = !config_.atrace_categories.empty() || !config_.atrace_apps.empty();
  DefineKprobes();
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> resolved, ResolveEvents(wants_atrace));
  SLUICE_RETURN_IF_ERROR(ApplyBufferSize(found_size));
  SLUICE_RETURN_IF_ERROR(ApplyClock(found_clock));
  SLUICE_RETURN_IF_ERROR(ApplyBufferPercent());
  if (!config_.preserve_buffer) SLUICE_RETURN_IF_ERROR(EmptyBuffer());
  EnableEvents(resolved);

  if (wants_atrace && is_android_) StartAtrace();
  if (!found_tracing_on) {
    changes_.tracing_on_found = false;
    Persist();
    SLUICE_RETURN_IF_ERROR(fs.WriteTracingOn(true));
  }
  return Status::Ok();
}

// The config's events, resolved against available_events; atrace categories
// add the kernel events this kernel has (atrace_categories.h), on any Linux,
// and ftrace/print for their user-space side. Unknown events and categories
// are warned about and skipped (sluice record refuses them before starting);
// "ftrace" group events (print: trace_marker writes) have no enable file and
// are always on.
StatusOr<std::vector<std::string>> FtraceSettings::ResolveEvents(bool wants_atrace) {
  const Tracefs& fs = *tracefs_;
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> available, fs.ReadAvailableEvents());
  std::vector<std::string> requested = config_.events;
  requested.insert(requested.end(), kprobe_events_.begin(), kprobe_events_.end());
  std::vector<std::string> user_space_only;
  if (wants_atrace) {
    requested.emplace_back(kPrintEvent);
    for (const std::string& name : config_.atrace_categories) {
      const AtraceCategory* category = FindAtraceCategory(name);
      if (!category) {
        // atrace on Android may know vendor categories; elsewhere it is a typo.
        if (!is_android_) unknown_events_.push_back("atrace category " + name);
        continue;
      }
      if (category->kernel_events.empty()) user_space_only.push_back(name);
      for (std::string& event : ExpandAtraceCategory(*category, available)) requested.push_back(std::move(event));
    }
    if (!is_android_ && (!user_space_only.empty() || !config_.atrace_apps.empty())) {
      // Not an error: the kernel side is recorded; what apps write to
      // trace_marker arrives as ftrace/print.
      Warn("not Android: no atrace to switch on app tracing" +
           std::string(user_space_only.empty() ? "" : " for " + Join(user_space_only, ", ")) +
           "; trace_marker writes are recorded as ftrace/print");
    }
  }
  std::vector<std::string> resolved;
  std::vector<std::string> unresolved;
  ResolveFtraceEvents(requested, available, &resolved, &unresolved);
  if (config_.throttle_rss_stat &&
      std::find(available.begin(), available.end(), kRssStatThrottled) != available.end()) {
    // Android's synthetic event: rss_stat only when the size moved by 512 KB.
    auto it = std::find(resolved.begin(), resolved.end(), kRssStat);
    if (it != resolved.end()) {
      if (std::find(resolved.begin(), resolved.end(), kRssStatThrottled) == resolved.end()) *it = kRssStatThrottled;
      else resolved.erase(it);
    }
  }
  if (config_.disable_generic_events) {
    std::vector<std::string>& generic = generic_events_left_off_;
    std::erase_if(resolved, [&generic](const std::string& event) {
      const size_t slash = event.find('/');
      if (FtraceEventHasOwnMessage(event.substr(0, slash), event.substr(slash + 1))) return false;
      generic.push_back(event);
      return true;
    });
    if (!generic.empty())
      Warn("disable_generic_events: left off the events without a message of their own: " + Join(generic, ", "));
  }
  for (const std::string& req : unresolved) {
    const std::string e = req.find('/') == std::string::npos ? "ftrace/" + req : req;
    if (e.find('*') == std::string::npos && fs.Exists("events/" + e + "/format") &&
        !fs.Exists("events/" + e + "/enable")) {
      if (std::find(always_on_.begin(), always_on_.end(), e) == always_on_.end()) {
        always_on_.push_back(e);
      }
    } else {
      unknown_events_.push_back(req);
    }
  }
  if (!unknown_events_.empty()) {
    Warn("ftrace events not in this kernel, skipped: " + Join(unknown_events_, ", "));
  }
  return resolved;
}

// kprobe_events is the kernel's one list for the whole machine (every
// instance's events come from it): probes are appended, never written over,
// and only those this FtraceSettings defined are removed at the end. A probe
// that exists already (another sluice session traces the same function) is
// used as it is. Its definition is saved in the state file before it is
// written, so that a killed recorder's cleanup removes it.
void FtraceSettings::DefineKprobes() {
  const Tracefs& fs = *tracefs_;
  for (const FtraceKprobe& probe : config_.kprobes) {
    const std::string& f = probe.function;
    const bool valid = !f.empty() && f.size() < 64 &&
                       std::all_of(f.begin(), f.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!valid) {
      failed_kprobes_.push_back(f);
      Warn("kprobe on '" + f + "' skipped: a kernel function name has only letters, digits and '_'");
      continue;
    }
    for (bool ret : {false, true}) {
      if (ret ? !probe.exit : !probe.entry) continue;
      const std::string event = std::string(ret ? kKretprobeGroup : kKprobeGroup) + "/" + f;
      if (!fs.Exists("events/" + event + "/enable")) {
        changes_.created_kprobes.push_back(event);
        Persist();
        // "r" without maxactive: the kernel sizes its return-probe slots.
        Status st = fs.AppendToRootFile("kprobe_events", std::string(ret ? "r:" : "p:") + event + " " + f);
        if (!st.ok()) {
          changes_.created_kprobes.pop_back();
          Persist();
          failed_kprobes_.push_back(f);
          Warn("cannot define the " + std::string(ret ? "kretprobe" : "kprobe") + " on " + f + ": " + st.message() +
               " (is it a kernel function this kernel can probe? kprobes need CONFIG_KPROBE_EVENTS)");
          continue;
        }
      }
      kprobe_events_.push_back(event);
    }
  }
}

// Empties the buffer of events written before this trace, always and on
// purpose: whether a clock change or a resize also empties it depends on the
// clock and size the machine was left in (a machine where Perfetto ran is
// already at "boot", and a resize keeps the pages it does not drop), so
// neither can be relied on. Opening `trace` with O_TRUNC is `echo > trace`:
// the kernel resets every CPU's buffer of this instance.
Status FtraceSettings::EmptyBuffer() {
  const std::string path = tracefs_->Path("trace");
  ScopedFd fd(open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (!fd.valid()) {
    return Status::Error("cannot empty the ftrace buffer (" + path + ": " + std::strerror(errno) +
                         "): events from before this trace would enter it; check that tracefs is writable, "
                         "or set preserve_ftrace_buffer to keep them on purpose");
  }
  return Status::Ok();
}

// An unexpanded root buffer that will expand to the requested size needs no
// write: enabling the first event expands it.
Status FtraceSettings::ApplyBufferSize(const TracefsBufferSize& found) {
  const Tracefs& fs = *tracefs_;
  if (config_.buffer_size_kb == 0 ||
      (!found.per_cpu_differs && found.kb == config_.buffer_size_kb)) {
    return Status::Ok();
  }
  if (found.per_cpu_differs) {
    std::vector<std::pair<uint32_t, uint32_t>> per_cpu;
    for (uint32_t cpu : fs.ListPerCpuDirs()) {
      SLUICE_ASSIGN_OR_RETURN(uint32_t kb, fs.ReadPerCpuBufferSizeKb(cpu));
      per_cpu.emplace_back(cpu, kb);
    }
    changes_.per_cpu_buffer_size_kb_found = std::move(per_cpu);
  } else {
    changes_.buffer_size_kb_found = found.kb;
  }
  Persist();
  StatusOr<TracefsBufferSize> root_found = Status::Error("the root instance itself");
  if (!fs.is_root_instance()) {
    StatusOr<std::string> text = ReadFile(fs.RootPath("buffer_size_kb"));
    root_found = text.ok() ? ParseBufferSize(*text) : StatusOr<TracefsBufferSize>(text.status());
  }
  Status st = fs.WriteBufferSizeKb(config_.buffer_size_kb);
  if (!st.ok()) {
    return Status::Error("cannot set the ftrace buffer to " + std::to_string(config_.buffer_size_kb) +
                         " KiB per CPU (" + st.message() + "): lower buffer_size_kb");
  }
  if (root_found.ok() && !root_found->expanded) ExpandRootLeftAtItsBootSize(*root_found);
  // The kernel rounds to whole pages: what it shows now is what the undo
  // compares with to know the size is still ours.
  if (auto now = fs.ReadBufferSize(); now.ok() && !now->per_cpu_differs) {
    changes_.buffer_size_kb_set = now->kb;
    Persist();
  }
  return Status::Ok();
}

// Linux before 6.6 (Debian 12's 6.1) keeps the "expanded" flag for the whole
// tracing system, not per instance: the instance resize just made sets it, and
// the kernel will never grow a root buffer that was still at its boot size: it
// now reads "7" (KiB per CPU), not "7 (expanded: 1408)", and the next tool to
// trace in the root (trace-cmd, an app's trace_marker writes) would get almost
// no room. 6.6 made the flag per instance, and the root stays as it was.
// Writing the size the root was waiting for is what its first enabled event
// would have done; the root is not ours to restore afterwards (the expansion
// is one-way, and "1408" is what the kernel would show by then anyway).
void FtraceSettings::ExpandRootLeftAtItsBootSize(const TracefsBufferSize& root_found) {
  const std::string path = tracefs_->RootPath("buffer_size_kb");
  StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return;
  StatusOr<TracefsBufferSize> now = ParseBufferSize(*text);
  if (!now.ok() || !StayedAtBootSize(root_found, *now)) return;
  Status st = Tracefs::WritePath(path, std::to_string(root_found.kb));
  if (!st.ok()) {
    Warn("resizing instance " + tracefs_->instance_name() + " left the never-used root buffer at its boot size (" +
         std::to_string(now->kb) + " KiB per CPU) and it could not be expanded to " +
         std::to_string(root_found.kb) + " KiB (" + st.message() + "): write " + std::to_string(root_found.kb) +
         " to " + path);
  }
}

Status FtraceSettings::ApplyClock(const std::string& found) {
  const Tracefs& fs = *tracefs_;
  if (!config_.boot_clock || found == "boot") return Status::Ok();
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> clocks, fs.ReadAvailableClocks());
  if (std::find(clocks.begin(), clocks.end(), "boot") != clocks.end()) {
    changes_.trace_clock_found = found;
    changes_.trace_clock_set = "boot";
    Persist();
    SLUICE_RETURN_IF_ERROR(fs.WriteTraceClock("boot"));
    trace_clock_ = "boot";
  }
  return Status::Ok();
}

// A kernel without buffer_percent (before 5.1) has poll() report any data
// as readable, which the readers handle (ftrace_reader_worker.h): the
// setting is then a warning, not an error.
Status FtraceSettings::ApplyBufferPercent() {
  const Tracefs& fs = *tracefs_;
  if (config_.buffer_percent == 0) return Status::Ok();
  if (!fs.Exists("buffer_percent")) {
    Warn("drain_buffer_percent " + std::to_string(config_.buffer_percent) + " is ignored: this kernel has no " +
         fs.Path("buffer_percent") + " (Linux 5.1+), so its readers wake at any data");
    return Status::Ok();
  }
  return WriteBufferPercent(config_.buffer_percent);
}

// The value found before the first change is the one Restore() puts back.
Status FtraceSettings::WriteBufferPercent(uint32_t percent) {
  const Tracefs& fs = *tracefs_;
  SLUICE_ASSIGN_OR_RETURN(const uint32_t now, fs.ReadBufferPercent());
  if (now == percent) return Status::Ok();
  if (!changes_.buffer_percent_found) changes_.buffer_percent_found = now;
  changes_.buffer_percent_set = percent;
  Persist();
  return fs.WriteBufferPercent(percent);
}

Status FtraceSettings::SetBufferPercent(uint32_t percent) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (restored_) return Status::Ok();
  return WriteBufferPercent(percent);
}

// Enables the events, skipping the ones that already are (someone else's:
// Restore() leaves them on). A failure is a warning, not an error.
void FtraceSettings::EnableEvents(const std::vector<std::string>& resolved) {
  const Tracefs& fs = *tracefs_;
  // Which are off (to enable) and which someone else enabled already; the
  // ones to enable go into the state file before the first write.
  std::vector<std::string> to_enable;
  std::unordered_set<std::string> active;
  for (const std::string& e : resolved) {
    const size_t slash = e.find('/');
    auto on = fs.ReadEventEnabled(e.substr(0, slash), e.substr(slash + 1));
    if (!on.ok()) {
      failed_events_.push_back(e);
      Warn("cannot enable ftrace event " + e + ": " + on.status().message());
    } else if (*on) {
      active.insert(e);
    } else {
      to_enable.push_back(e);
    }
  }
  if (!to_enable.empty()) {
    changes_.enabled_events = to_enable;
    Persist();
  }
  for (const std::string& e : to_enable) {
    const size_t slash = e.find('/');
    Status st = fs.WriteEventEnabled(e.substr(0, slash), e.substr(slash + 1), true);
    if (!st.ok()) {
      failed_events_.push_back(e);
      Warn("cannot enable ftrace event " + e + ": " + st.message());
      continue;
    }
    enabled_by_us_.push_back(e);
    active.insert(e);
  }
  if (enabled_by_us_.size() != to_enable.size()) {
    changes_.enabled_events = enabled_by_us_;
    Persist();
  }
  for (const std::string& e : resolved) {
    if (active.count(e)) active_events_.push_back(e);
  }
  for (const std::string& e : always_on_) {
    if (std::find(active_events_.begin(), active_events_.end(), e) == active_events_.end()) {
      active_events_.push_back(e);
    }
  }
}

void FtraceSettings::StartAtrace() {
  std::vector<std::string> argv = {options_.atrace_path, "--async_start", "--only_userspace"};
  if (!config_.atrace_apps.empty()) {
    argv.emplace_back("-a");
    argv.push_back(Join(config_.atrace_apps, ","));
  }
  for (const std::string& c : config_.atrace_categories) argv.push_back(c);
  changes_.atrace_path = options_.atrace_path;
  Persist();
  std::string output;
  int rc = RunCommand(argv, &output);
  if (rc != 0) {
    std::string_view out = TrimWhitespace(output);
    atrace_errors_ = Join(argv, " ") + " failed (exit " + std::to_string(rc) + ")" +
                     (out.empty() ? std::string() : ": " + std::string(out));
    Warn(atrace_errors_);
    changes_.atrace_path.clear();
    Persist();
    return;
  }
  // atrace prints warnings (e.g. unknown categories) but still succeeds.
  std::string_view out = TrimWhitespace(output);
  if (!out.empty()) atrace_errors_ = std::string(out);
}

void FtraceSettings::DisableEvents() {
  std::lock_guard<std::mutex> lock(mutex_);
  DisableEventsLocked();
}

void FtraceSettings::DisableEventsLocked() {
  if (events_disabled_) return;
  events_disabled_ = true;
  UndoEventChanges(*tracefs_, &changes_,
                   [this](const std::vector<std::string>& argv, std::string* output) {
                     return RunCommand(argv, output);
                   },
                   &restore_report_);
  Persist();
}

void FtraceSettings::Restore() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (restored_) return;
  restored_ = true;
  DisableEventsLocked();
  UndoSettingChanges(*tracefs_, &changes_, &restore_report_);
  Persist();
  for (const std::string& e : restore_report_.errors) Warn("ftrace state not restored: " + e);
  for (const std::string& e : restore_report_.left) Warn("ftrace state " + e);
}

void FtraceSettings::OnInstanceRemoved() {
  std::lock_guard<std::mutex> lock(mutex_);
  changes_.created_instance = false;
  Persist();
}

}  // namespace sluice
