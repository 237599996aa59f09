#include "user/probes/tracefs_state_file.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <map>

#include "shm/base/clock.h"
#include "shm/base/errno_message.h"
#include "shm/base/file_util.h"
#include "shm/base/string_util.h"

namespace sluice {
namespace {

constexpr std::string_view kMagic = "sluice-tracefs-state";
constexpr uint32_t kVersion = 1;
constexpr std::string_view kPrefix = "tracefs-";
constexpr std::string_view kSuffix = ".state";
constexpr std::string_view kTmpSuffix = ".state.tmp";
constexpr size_t kMaxFileBytes = 1 << 20;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

// [A-Za-z0-9_.-]+, not "." or "..".
bool IsPlainName(std::string_view s) {
  if (s.empty() || s.size() > 255 || s == "." || s == "..") return false;
  for (char c : s) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

bool IsEventName(std::string_view s) {
  const size_t slash = s.find('/');
  return slash != std::string_view::npos && IsPlainName(s.substr(0, slash)) &&
         IsPlainName(s.substr(slash + 1));
}

// Absolute, printable without spaces, no ".." component.
bool IsSafePath(std::string_view s) {
  if (s.empty() || s.size() > 4096 || s[0] != '/') return false;
  for (char c : s) {
    if (c <= ' ' || c > '~') return false;
  }
  return s.find("/../") == std::string_view::npos && !s.ends_with("/..");
}

bool IsPrintableLine(std::string_view s) {
  for (char c : s) {
    if (c < ' ' || c > '~') return false;
  }
  return !s.empty() && s.size() <= 255;
}

bool IsBootId(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-')) return false;
  }
  return true;
}

std::string ThisProcessName() {
  auto comm = ReadFile("/proc/self/comm", 256);
  std::string_view name = comm.ok() ? TrimWhitespace(*comm) : std::string_view();
  return IsPrintableLine(name) ? std::string(name) : std::string("sluice");
}

// One parsed line's key and value, and the parser's view of what came before.
struct StateParser {
  TracefsState state;
  std::map<std::string, int> seen;  // Scalar keys, to refuse repeats.
  bool ended = false;

  Status Line(std::string_view key, std::string_view value);
};

Status StateParser::Line(std::string_view key, std::string_view value) {
  TracefsChanges& c = state.changes;
  const bool repeated = key == "enabled_event" || key == "created_kprobe" || key == "buffer_size_kb_found_cpu";
  if (!repeated && seen[std::string(key)]++ != 0) {
    return Status::Error("'" + std::string(key) + "' appears twice");
  }
  auto bad = [&](std::string_view what) {
    return Status::Error("bad " + std::string(what) + " '" + std::string(value) + "'");
  };
  if (key == "owner_pid") {
    if (!ParseU32(value, &state.owner.pid) || state.owner.pid == 0) return bad("pid");
  } else if (key == "owner_start_time") {
    if (!ParseU64(value, &state.owner.start_time)) return bad("start time");
  } else if (key == "owner_boot_id") {
    if (!IsBootId(value)) return bad("boot id");
    state.owner.boot_id = std::string(value);
  } else if (key == "owner_name") {
    if (!IsPrintableLine(value)) return bad("name");
    state.owner_name = std::string(value);
  } else if (key == "created_boot_ns") {
    if (!ParseU64(value, &state.created_boot_ns)) return bad("time");
  } else if (key == "tracefs_root") {
    if (!IsSafePath(value)) return bad("tracefs root");
    c.tracefs_root = std::string(value);
  } else if (key == "instance") {
    if (!IsPlainName(value)) return bad("instance name");
    c.instance_name = std::string(value);
  } else if (key == "created_instance") {
    if (value != "1") return bad("created_instance");
    c.created_instance = true;
  } else if (key == "tracing_on_found") {
    if (value != "0" && value != "1") return bad("tracing_on");
    c.tracing_on_found = value == "1";
  } else if (key == "trace_clock_found" || key == "trace_clock_set") {
    if (!IsPlainName(value)) return bad("clock");
    if (key == "trace_clock_found") {
      c.trace_clock_found = std::string(value);
    } else {
      c.trace_clock_set = std::string(value);
    }
  } else if (key == "buffer_size_kb_found") {
    uint32_t kb = 0;
    if (!ParseU32(value, &kb) || kb == 0) return bad("size");
    c.buffer_size_kb_found = kb;
  } else if (key == "buffer_size_kb_found_cpu") {
    const size_t space = value.find(' ');
    uint32_t cpu = 0, kb = 0;
    if (space == std::string_view::npos || !ParseU32(value.substr(0, space), &cpu) ||
        !ParseU32(value.substr(space + 1), &kb) || kb == 0 || cpu >= 65536) {
      return bad("per-CPU size");
    }
    c.per_cpu_buffer_size_kb_found.emplace_back(cpu, kb);
  } else if (key == "buffer_size_kb_set") {
    if (!ParseU32(value, &c.buffer_size_kb_set)) return bad("size");
  } else if (key == "buffer_percent_found" || key == "buffer_percent_set") {
    uint32_t percent = 0;
    if (!ParseU32(value, &percent) || percent > 100) return bad("buffer_percent");
    if (key == "buffer_percent_found") {
      c.buffer_percent_found = percent;
    } else {
      c.buffer_percent_set = percent;
    }
  } else if (key == "enabled_event") {
    if (!IsEventName(value)) return bad("event name");
    c.enabled_events.emplace_back(value);
  } else if (key == "created_kprobe") {
    // Only sluice's own groups: a corrupt file must not remove others' probes.
    if (!IsEventName(value) || !(value.starts_with("sluice_kprobes/") || value.starts_with("sluice_kretprobes/")))
      return bad("kprobe name");
    c.created_kprobes.emplace_back(value);
  } else if (key == "atrace_path") {
    if (!IsSafePath(value)) return bad("atrace path");
    c.atrace_path = std::string(value);
  } else {
    return Status::Error("unknown key '" + std::string(key) + "' (written by another sluice version?)");
  }
  return Status::Ok();
}

std::atomic<uint32_t> g_next_file_number{0};

}  // namespace

std::string EncodeTracefsState(const TracefsState& s) {
  const TracefsChanges& c = s.changes;
  std::string out = std::string(kMagic) + " " + std::to_string(kVersion) + "\n";
  auto line = [&out](std::string_view key, const std::string& value) {
    out.append(key).append(" ").append(value).append("\n");
  };
  line("owner_pid", std::to_string(s.owner.pid));
  line("owner_start_time", std::to_string(s.owner.start_time));
  line("owner_boot_id", s.owner.boot_id);
  line("owner_name", s.owner_name);
  line("created_boot_ns", std::to_string(s.created_boot_ns));
  line("tracefs_root", c.tracefs_root);
  if (!c.instance_name.empty()) line("instance", c.instance_name);
  if (c.created_instance) line("created_instance", "1");
  if (c.tracing_on_found) line("tracing_on_found", *c.tracing_on_found ? "1" : "0");
  if (c.trace_clock_found) line("trace_clock_found", *c.trace_clock_found);
  if (!c.trace_clock_set.empty()) line("trace_clock_set", c.trace_clock_set);
  if (c.buffer_size_kb_found) line("buffer_size_kb_found", std::to_string(*c.buffer_size_kb_found));
  for (auto [cpu, kb] : c.per_cpu_buffer_size_kb_found) {
    line("buffer_size_kb_found_cpu", std::to_string(cpu) + " " + std::to_string(kb));
  }
  if (c.buffer_size_kb_set != 0) line("buffer_size_kb_set", std::to_string(c.buffer_size_kb_set));
  if (c.buffer_percent_found) {
    line("buffer_percent_found", std::to_string(*c.buffer_percent_found));
    line("buffer_percent_set", std::to_string(c.buffer_percent_set));
  }
  for (const std::string& e : c.enabled_events) line("enabled_event", e);
  for (const std::string& k : c.created_kprobes) line("created_kprobe", k);
  if (!c.atrace_path.empty()) line("atrace_path", c.atrace_path);
  out += "end\n";
  return out;
}

StatusOr<TracefsState> ParseTracefsState(std::string_view text) {
  StateParser parser;
  size_t line_number = 0;
  Status error;
  ForEachLine(text, [&](std::string_view line) {
    line_number++;
    if (parser.ended) {
      error = Status::Error("text after 'end'");
      return false;
    }
    if (line_number == 1) {
      if (line != std::string(kMagic) + " " + std::to_string(kVersion)) {
        error = Status::Error(line.starts_with(kMagic)
                                  ? "format version '" + std::string(line.substr(kMagic.size())) +
                                        "' is not " + std::to_string(kVersion) +
                                        " (written by another sluice version?)"
                                  : "not a sluice tracefs state file (no '" + std::string(kMagic) +
                                        "' line first)");
        return false;
      }
      return true;
    }
    if (line == "end") {
      parser.ended = true;
      return true;
    }
    const size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size()) {
      error = Status::Error("not a 'key value' line: '" + std::string(line) + "'");
      return false;
    }
    error = parser.Line(line.substr(0, space), line.substr(space + 1));
    return error.ok();
  });
  auto at_line = [&](const Status& st) {
    return Status::Error("line " + std::to_string(line_number) + ": " + st.message());
  };
  if (!error.ok()) return at_line(error);
  if (line_number == 0) return Status::Error("empty file");
  if (!parser.ended) return Status::Error("no 'end' line: the file is cut short");
  for (const char* key : {"owner_pid", "owner_start_time", "owner_boot_id", "owner_name",
                          "created_boot_ns", "tracefs_root"}) {
    if (parser.seen[key] == 0) return Status::Error(std::string("no '") + key + "' line");
  }
  const TracefsChanges& c = parser.state.changes;
  if (c.buffer_size_kb_found && !c.per_cpu_buffer_size_kb_found.empty()) {
    return Status::Error("both a uniform and per-CPU buffer sizes found");
  }
  if (!c.trace_clock_set.empty() && !c.trace_clock_found) {
    return Status::Error("trace_clock_set without trace_clock_found");
  }
  if (parser.seen["buffer_percent_set"] != 0 && !c.buffer_percent_found) {
    return Status::Error("buffer_percent_set without buffer_percent_found");
  }
  return std::move(parser.state);
}

StatusOr<TracefsState> ReadTracefsStateFile(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(std::string text, ReadFile(path, kMaxFileBytes));
  auto state = ParseTracefsState(text);
  if (!state.ok()) return Status::Error(path + ": " + state.status().message());
  return state;
}

Status WriteTracefsStateFile(const std::string& path, const TracefsState& state) {
  if (state.changes.empty()) {
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Status::Error("cannot remove " + path + " (" + ErrnoMessage(errno) + ")");
    }
    return Status::Ok();
  }
  return WriteFileAtomically(path, EncodeTracefsState(state), 0600);
}

Status PrepareTracefsStateDir(const std::string& dir_as_given) {
  std::string dir = dir_as_given;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty() || dir[0] != '/') {
    return Status::Error("the tracefs state directory '" + dir + "' is not an absolute path");
  }
  // mkdir -p: missing parents 0755 (/run/sluice also holds sluiced's
  // sockets, which other users may reach), the state directory 0700.
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string part = dir.substr(0, slash);
    if (mkdir(part.c_str(), slash == std::string::npos ? 0700 : 0755) != 0 && errno != EEXIST) {
      return Status::Error("cannot create " + part + " (" + ErrnoMessage(errno) +
                           "): give sluice-probes a writable --state-dir");
    }
    if (slash == std::string::npos) break;
  }
  return CheckTracefsStateDir(dir);
}

Status CheckTracefsStateDir(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::Error(dir + " is not a directory: give sluice-probes another --state-dir");
  }
  if (st.st_uid != geteuid()) {
    return Status::Error(dir + " belongs to uid " + std::to_string(st.st_uid) + ", not to uid " +
                         std::to_string(geteuid()) + ": its files make sluice write to tracefs; " +
                         "remove it or give another --state-dir");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    snprintf(mode, sizeof(mode), "%04o", st.st_mode & 07777);
    return Status::Error(dir + " may be written by others (mode " + mode +
                         "): its files make sluice write to tracefs; chmod 700 " + dir);
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<TracefsStateFile>> TracefsStateFile::Create(const std::string& dir) {
  auto self = ReadProcessIdentity(getpid());
  if (!self.ok()) {
    return Status::Error("cannot identify this process for its tracefs state file: " +
                         self.status().message());
  }
  TracefsState state;
  state.owner = std::move(self).value();
  state.owner_name = ThisProcessName();
  state.created_boot_ns = BootTimeNs();
  const std::string path = dir + "/" + std::string(kPrefix) + std::to_string(state.owner.pid) + "-" +
                           std::to_string(state.owner.start_time) + "-" +
                           std::to_string(g_next_file_number.fetch_add(1)) + std::string(kSuffix);
  return std::unique_ptr<TracefsStateFile>(new TracefsStateFile(dir, path, std::move(state)));
}

Status TracefsStateFile::Save(const TracefsChanges& changes) {
  state_.changes = changes;
  if (!dir_ready_ && !changes.empty()) {
    SLUICE_RETURN_IF_ERROR(PrepareTracefsStateDir(dir_));
    dir_ready_ = true;
  }
  return WriteTracefsStateFile(path_, state_);
}

bool ParseTracefsStateFileName(std::string_view name, uint32_t* pid, uint64_t* start_time,
                               bool* tmp) {
  if (!name.starts_with(kPrefix)) return false;
  *tmp = name.ends_with(kTmpSuffix);
  if (!*tmp && !name.ends_with(kSuffix)) return false;
  std::string_view rest =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() -
                                      (*tmp ? kTmpSuffix.size() : kSuffix.size()));
  const size_t a = rest.find('-');
  const size_t b = a == std::string_view::npos ? a : rest.find('-', a + 1);
  uint64_t number = 0;
  return b != std::string_view::npos && ParseU32(rest.substr(0, a), pid) &&
         ParseU64(rest.substr(a + 1, b - a - 1), start_time) &&
         ParseU64(rest.substr(b + 1), &number);
}

}  // namespace sluice
