#include "user/probes/tracefs_changes.h"

#include "shm/base/string_util.h"

namespace sluice {
namespace {

std::string PerCpuSizes(const std::vector<std::pair<uint32_t, uint32_t>>& sizes) {
  std::vector<std::string> parts;
  for (auto [cpu, kb] : sizes) parts.push_back("cpu" + std::to_string(cpu) + " " + std::to_string(kb));
  return "per CPU (" + Join(parts, ", ") + ")";
}

// Whether the buffer already has the size(s) found.
bool BufferHasFoundSize(const Tracefs& fs, const TracefsChanges& c, const TracefsBufferSize& now) {
  if (c.buffer_size_kb_found) return !now.per_cpu_differs && now.kb == *c.buffer_size_kb_found;
  if (!now.per_cpu_differs) return false;
  for (auto [cpu, kb] : c.per_cpu_buffer_size_kb_found) {
    auto cpu_kb = fs.ReadPerCpuBufferSizeKb(cpu);
    if (!cpu_kb.ok() || *cpu_kb != kb) return false;
  }
  return true;
}

void UndoTracingOn(const Tracefs& fs, TracefsChanges* c, TracefsUndoReport* report) {
  const bool found = *c->tracing_on_found;
  auto now = fs.ReadTracingOn();
  if (!now.ok() || *now != found) {
    Status st = fs.WriteTracingOn(found);
    if (!st.ok()) {
      report->errors.push_back(st.message());
      return;
    }
    report->done.push_back(std::string("tracing_on ") + (found ? "0 -> 1" : "1 -> 0"));
  }
  c->tracing_on_found.reset();
}

void UndoTraceClock(const Tracefs& fs, TracefsChanges* c, TracefsUndoReport* report) {
  const std::string found = *c->trace_clock_found;
  auto now = fs.ReadTraceClock();
  if (now.ok() && *now == found) {
    // Already back.
  } else if (now.ok() && !c->trace_clock_set.empty() && *now != c->trace_clock_set) {
    report->left.push_back("trace_clock left at " + *now + " (changed since from " +
                           c->trace_clock_set + ")");
  } else {
    Status st = fs.WriteTraceClock(found);
    if (!st.ok()) {
      report->errors.push_back(st.message());
      return;
    }
    report->done.push_back("trace_clock " + (now.ok() ? *now : std::string("?")) + " -> " + found);
  }
  c->trace_clock_found.reset();
  c->trace_clock_set.clear();
}

void UndoBufferPercent(const Tracefs& fs, TracefsChanges* c, TracefsUndoReport* report) {
  const uint32_t found = *c->buffer_percent_found;
  auto now = fs.ReadBufferPercent();
  if (now.ok() && *now == found) {
    // Already back.
  } else if (now.ok() && *now != c->buffer_percent_set) {
    report->left.push_back("buffer_percent left at " + std::to_string(*now) + " (changed since from " +
                           std::to_string(c->buffer_percent_set) + ")");
  } else {
    Status st = fs.WriteBufferPercent(found);
    if (!st.ok()) {
      report->errors.push_back(st.message());
      return;
    }
    report->done.push_back("buffer_percent " + (now.ok() ? std::to_string(*now) : std::string("?")) + " -> " +
                           std::to_string(found));
  }
  c->buffer_percent_found.reset();
  c->buffer_percent_set = 0;
}

void UndoBufferSize(const Tracefs& fs, TracefsChanges* c, TracefsUndoReport* report) {
  auto now = fs.ReadBufferSize();
  const std::string now_text = now.ok() ? now->text : std::string("?");
  const bool ours = !now.ok() || c->buffer_size_kb_set == 0 ||
                    (!now->per_cpu_differs && now->kb == c->buffer_size_kb_set);
  if (now.ok() && BufferHasFoundSize(fs, *c, *now)) {
    // Already back.
  } else if (!ours) {
    report->left.push_back("buffer_size_kb left at " + now_text + " (changed since from " +
                           std::to_string(c->buffer_size_kb_set) + ")");
  } else if (c->buffer_size_kb_found) {
    Status st = fs.WriteBufferSizeKb(*c->buffer_size_kb_found);
    if (!st.ok()) {
      report->errors.push_back(st.message());
      return;
    }
    report->done.push_back("buffer_size_kb " + now_text + " -> " +
                           std::to_string(*c->buffer_size_kb_found));
  } else {
    std::vector<std::pair<uint32_t, uint32_t>> failed;
    for (auto [cpu, kb] : c->per_cpu_buffer_size_kb_found) {
      Status st = fs.WritePerCpuBufferSizeKb(cpu, kb);
      if (!st.ok()) {
        report->errors.push_back(st.message());
        failed.emplace_back(cpu, kb);
      }
    }
    if (failed.size() < c->per_cpu_buffer_size_kb_found.size()) {
      report->done.push_back("buffer_size_kb " + now_text + " -> " +
                             PerCpuSizes(c->per_cpu_buffer_size_kb_found));
    }
    if (!failed.empty()) {
      c->per_cpu_buffer_size_kb_found = std::move(failed);
      return;
    }
  }
  c->buffer_size_kb_found.reset();
  c->per_cpu_buffer_size_kb_found.clear();
  c->buffer_size_kb_set = 0;
}

}  // namespace

std::string TracefsUndoReport::Summary() const {
  std::vector<std::string> all = done;
  all.insert(all.end(), left.begin(), left.end());
  all.insert(all.end(), errors.begin(), errors.end());
  return all.empty() ? "nothing to undo" : Join(all, ", ");
}

void UndoEventChanges(const Tracefs& fs, TracefsChanges* changes, const CommandRunner& run_command,
                      TracefsUndoReport* report) {
  if (!changes->atrace_path.empty()) {
    std::string output;
    const std::vector<std::string> argv = {changes->atrace_path, "--async_stop", "--only_userspace"};
    const int rc = run_command ? run_command(argv, &output) : RunCommandAndWait(argv, &output);
    if (rc != 0) {
      report->errors.push_back("atrace --async_stop failed (exit " + std::to_string(rc) + ")");
    } else {
      report->done.push_back("stopped atrace");
    }
    // Running it again would not help: it is reported instead.
    changes->atrace_path.clear();
  }
  std::vector<std::string> failed;
  uint32_t disabled = 0;
  for (const std::string& e : changes->enabled_events) {
    const size_t slash = e.find('/');
    const std::string group = e.substr(0, slash), name = e.substr(slash + 1);
    auto on = fs.ReadEventEnabled(group, name);
    if (on.ok() && !*on) continue;  // Already off.
    Status st = fs.WriteEventEnabled(group, name, false);
    if (!st.ok()) {
      report->errors.push_back(st.message());
      failed.push_back(e);
      continue;
    }
    disabled++;
  }
  changes->enabled_events = std::move(failed);
  if (disabled != 0) {
    report->done.push_back("disabled " + std::to_string(disabled) +
                           (disabled == 1 ? " event" : " events"));
  }
  // The probes, once their events are off here. The kernel refuses to
  // remove one that is enabled elsewhere (EBUSY: another instance records
  // it): it stays listed, to be removed by a later cleanup.
  std::vector<std::string> kept;
  uint32_t removed = 0;
  for (const std::string& probe : changes->created_kprobes) {
    Status st = fs.AppendToRootFile("kprobe_events", "-:" + probe);
    if (!st.ok()) {
      report->errors.push_back(st.message());
      kept.push_back(probe);
      continue;
    }
    removed++;
  }
  changes->created_kprobes = std::move(kept);
  if (removed != 0) report->done.push_back("removed " + std::to_string(removed) + (removed == 1 ? " kprobe" : " kprobes"));
}

void UndoSettingChanges(const Tracefs& fs, TracefsChanges* changes, TracefsUndoReport* report) {
  // tracing_on first: nothing more is recorded from here on.
  if (changes->tracing_on_found) UndoTracingOn(fs, changes, report);
  if (changes->trace_clock_found) UndoTraceClock(fs, changes, report);
  if (changes->changed_buffer_size()) UndoBufferSize(fs, changes, report);
  if (changes->buffer_percent_found) UndoBufferPercent(fs, changes, report);
}

}  // namespace sluice
