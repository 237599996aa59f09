#include "user/probes/tracefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include "shm/base/cpu_list.h"
#include "shm/base/errno_message.h"
#include "shm/base/file_util.h"
#include "shm/base/scoped_fd.h"
#include "shm/base/string_util.h"

namespace sluice {
namespace {

// A mounted tracefs has tracing_on at its top.
bool LooksLikeTracefs(const std::string& dir) { return PathExists(dir + "/tracing_on"); }

}  // namespace

StatusOr<std::string> FindTracefsRoot(const TracefsOptions& options) {
  if (!options.root.empty()) {
    if (!LooksLikeTracefs(options.root)) {
      return Status::Error("no tracefs at " + options.root +
                           " (no tracing_on file): point the tracefs root at a mounted tracefs");
    }
    return options.root;
  }
  const std::string primary(Tracefs::kDefaultRoot);
  const std::string debugfs(Tracefs::kDebugfsRoot);
  if (LooksLikeTracefs(primary)) return primary;
  // Accessing debugfs's tracing dir automounts tracefs there.
  if (LooksLikeTracefs(debugfs)) return debugfs;
  if (options.allow_mount && IsDirectory(primary)) {
    if (mount("nodev", primary.c_str(), "tracefs", 0, nullptr) == 0 && LooksLikeTracefs(primary)) {
      return primary;
    }
    const int err = errno;
    if (err == EPERM || err == EACCES) {
      return Status::Error("tracefs is not mounted and mounting it needs root: run sluice as root, "
                           "or mount it: mount -t tracefs nodev " + primary);
    }
    return Status::Error("tracefs is not mounted and mounting it failed (" +
                         ErrnoMessage(err) +
                         "): mount -t tracefs nodev " + primary +
                         " (kernel needs CONFIG_FTRACE and CONFIG_TRACING)");
  }
  return Status::Error("tracefs not found at " + primary + " or " + debugfs +
                       ": mount it (mount -t tracefs nodev " + primary +
                       "); the kernel needs CONFIG_FTRACE");
}

StatusOr<std::unique_ptr<Tracefs>> Tracefs::Open(const TracefsOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::string root, FindTracefsRoot(options));
  std::string dir = root;
  bool created = false;
  if (!options.instance_name.empty()) {
    const std::string& name = options.instance_name;
    if (name.find('/') != std::string::npos || name == "." || name == "..") {
      return Status::Error("invalid ftrace instance name '" + name +
                           "': use a plain directory name without '/'");
    }
    dir = root + "/instances/" + name;
    if (!IsDirectory(dir)) {
      if (!options.create_instance) {
        return Status::Error("ftrace instance " + dir + " does not exist: create it with mkdir " + dir);
      }
      if (mkdir(dir.c_str(), 0755) != 0) {
        const int err = errno;
        if (err == EEXIST && IsDirectory(dir)) {
          // Raced with someone creating it: theirs, not ours.
        } else if (err == EPERM || err == EACCES) {
          return Status::Error("cannot create ftrace instance " + dir + " (" + ErrnoMessage(err) +
                               "): run sluice as root");
        } else {
          return Status::Error("cannot create ftrace instance " + dir + " (" + ErrnoMessage(err) +
                               "): the kernel needs tracefs instances (3.10+)");
        }
      } else {
        created = true;
      }
    }
  }
  if (access((dir + "/tracing_on").c_str(), W_OK) != 0) {
    Status err = Status::Error("tracefs at " + dir + " is not writable (" + ErrnoMessage(errno) +
                               "): run sluice as root");
    if (created) rmdir(dir.c_str());
    return err;
  }
  return std::unique_ptr<Tracefs>(
      new Tracefs(std::move(root), std::move(dir), options.instance_name, created,
                  options.cpu_online_path));
}

Status Tracefs::RemoveCreatedInstance() {
  if (!created_instance_) return Status::Ok();
  if (rmdir(dir_.c_str()) != 0 && errno != ENOENT) {
    return Status::Error("cannot remove ftrace instance " + dir_ + " (" + ErrnoMessage(errno) +
                         "): remove it with rmdir " + dir_);
  }
  created_instance_ = false;
  return Status::Ok();
}

std::string Tracefs::Path(std::string_view rel) const { return dir_ + "/" + std::string(rel); }
std::string Tracefs::RootPath(std::string_view rel) const { return root_ + "/" + std::string(rel); }
std::string Tracefs::PerCpuPath(uint32_t cpu, std::string_view file) const {
  return dir_ + "/per_cpu/cpu" + std::to_string(cpu) + "/" + std::string(file);
}

Status Tracefs::WritePath(const std::string& path, std::string_view value) {
  ScopedFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return Status::Error("cannot open " + path + " for writing (" + ErrnoMessage(errno) + ")");
  // A plain file with contents is a fake tree in a test: replace its contents.
  // tracefs files stat as size 0 and are never truncated (see header).
  struct stat st;
  if (fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && ftruncate(fd.get(), 0) != 0) {
    return Status::Error("cannot truncate " + path + " (" + ErrnoMessage(errno) + ")");
  }
  ssize_t n;
  do {
    n = write(fd.get(), value.data(), value.size());
  } while (n < 0 && errno == EINTR);
  const int err = errno;
  fd.reset();
  if (n < 0) {
    return Status::Error("cannot write '" + std::string(value) + "' to " + path + " (" +
                         ErrnoMessage(err) + ")");
  }
  if (static_cast<size_t>(n) != value.size()) {
    return Status::Error("short write of '" + std::string(value) + "' to " + path);
  }
  return Status::Ok();
}

StatusOr<std::string> Tracefs::Read(std::string_view rel) const { return ReadFile(Path(rel)); }
Status Tracefs::AppendToRootFile(std::string_view rel, std::string_view line) const {
  const std::string path = RootPath(rel);
  ScopedFd fd(open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC));
  if (!fd.valid()) return Status::Error("cannot open " + path + " for appending (" + ErrnoMessage(errno) + ")");
  // A line of its own in a fake tree's plain file; the kernel takes either.
  const std::string text = std::string(line) + "\n";
  ssize_t n;
  do {
    n = write(fd.get(), text.data(), text.size());
  } while (n < 0 && errno == EINTR);
  const int err = errno;
  fd.reset();
  if (n < 0) return Status::Error("cannot write '" + std::string(line) + "' to " + path + " (" + ErrnoMessage(err) + ")");
  return Status::Ok();
}

Status Tracefs::Write(std::string_view rel, std::string_view value) const {
  return WritePath(Path(rel), value);
}
bool Tracefs::Exists(std::string_view rel) const { return PathExists(Path(rel)); }

StatusOr<bool> Tracefs::ReadTracingOn() const {
  SLUICE_ASSIGN_OR_RETURN(std::string text, Read("tracing_on"));
  std::string_view v = TrimWhitespace(text);
  if (v == "0") return false;
  if (v == "1") return true;
  return Status::Error("unexpected contents of " + Path("tracing_on") + ": '" + std::string(v) + "'");
}

Status Tracefs::WriteTracingOn(bool on) const { return Write("tracing_on", on ? "1" : "0"); }

StatusOr<std::string> Tracefs::ReadTraceClock() const {
  SLUICE_ASSIGN_OR_RETURN(std::string text, Read("trace_clock"));
  std::string clock = ParseSelectedTraceClock(text);
  if (clock.empty()) {
    return Status::Error("no selected clock in " + Path("trace_clock") + ": '" +
                         std::string(TrimWhitespace(text)) + "'");
  }
  return clock;
}

StatusOr<std::vector<std::string>> Tracefs::ReadAvailableClocks() const {
  SLUICE_ASSIGN_OR_RETURN(std::string text, Read("trace_clock"));
  return ParseTraceClocks(text);
}

Status Tracefs::WriteTraceClock(std::string_view clock) const { return Write("trace_clock", clock); }

StatusOr<TracefsBufferSize> Tracefs::ReadBufferSize() const {
  SLUICE_ASSIGN_OR_RETURN(std::string text, Read("buffer_size_kb"));
  auto parsed = ParseBufferSize(text);
  if (!parsed.ok()) {
    return Status::Error(parsed.status().message() + " in " + Path("buffer_size_kb"));
  }
  return parsed;
}

StatusOr<uint32_t> Tracefs::ReadPerCpuBufferSizeKb(uint32_t cpu) const {
  const std::string path = PerCpuPath(cpu, "buffer_size_kb");
  SLUICE_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  auto parsed = ParseBufferSize(text);
  if (!parsed.ok()) return Status::Error(parsed.status().message() + " in " + path);
  return parsed->kb;
}

Status Tracefs::WriteBufferSizeKb(uint32_t kb) const {
  return Write("buffer_size_kb", std::to_string(kb));
}

Status Tracefs::WritePerCpuBufferSizeKb(uint32_t cpu, uint32_t kb) const {
  return WritePath(PerCpuPath(cpu, "buffer_size_kb"), std::to_string(kb));
}

StatusOr<uint32_t> Tracefs::ReadBufferPercent() const {
  SLUICE_ASSIGN_OR_RETURN(std::string text, Read("buffer_percent"));
  uint32_t percent = 0;
  if (!ParseU32(TrimWhitespace(text), &percent) || percent > 100) {
    return Status::Error("unexpected contents of " + Path("buffer_percent") + ": '" +
                         std::string(TrimWhitespace(text)) + "'");
  }
  return percent;
}

Status Tracefs::WriteBufferPercent(uint32_t percent) const {
  return Write("buffer_percent", std::to_string(percent));
}

StatusOr<uint32_t> Tracefs::ReadSubBufferSize() const {
  if (Exists("buffer_subbuf_size_kb")) {
    SLUICE_ASSIGN_OR_RETURN(std::string text, Read("buffer_subbuf_size_kb"));
    uint32_t kb = 0;
    if (!ParseU32(text, &kb) || kb == 0 || kb > 1024) {
      return Status::Error("unexpected contents of " + Path("buffer_subbuf_size_kb") + ": '" +
                           std::string(TrimWhitespace(text)) + "'");
    }
    return kb * 1024;
  }
  return static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
}

StatusOr<std::vector<std::string>> Tracefs::ReadAvailableEvents() const {
  SLUICE_ASSIGN_OR_RETURN(std::string text, ReadFile(RootPath("available_events")));
  return ParseAvailableEvents(text);
}

StatusOr<bool> Tracefs::ReadEventEnabled(std::string_view group, std::string_view name) const {
  SLUICE_ASSIGN_OR_RETURN(
      std::string text,
      Read("events/" + std::string(group) + "/" + std::string(name) + "/enable"));
  std::string_view v = TrimWhitespace(text);
  return !v.empty() && v[0] == '1';
}

Status Tracefs::WriteEventEnabled(std::string_view group, std::string_view name, bool on) const {
  return Write("events/" + std::string(group) + "/" + std::string(name) + "/enable", on ? "1" : "0");
}

StatusOr<std::vector<uint32_t>> Tracefs::ReadOnlineCpus() const {
  SLUICE_ASSIGN_OR_RETURN(std::string text, ReadFile(cpu_online_path_));
  auto cpus = ParseCpuList(text);
  if (!cpus.ok()) return Status::Error(cpus.status().message() + " in " + cpu_online_path_);
  return cpus;
}

StatusOr<std::vector<uint32_t>> Tracefs::ReadOnlineCpus(ScopedFd* fd) const {
  char buf[1024];
  SLUICE_ASSIGN_OR_RETURN(std::string_view text, PreadFromStart(cpu_online_path_, fd, buf));
  // A list too long for the buffer (thousands of CPUs, not in ranges).
  if (text.size() == sizeof(buf)) return ReadOnlineCpus();
  auto cpus = ParseCpuList(text);
  if (!cpus.ok()) return Status::Error(cpus.status().message() + " in " + cpu_online_path_);
  return cpus;
}

std::vector<uint32_t> Tracefs::ListPerCpuDirs() const {
  std::vector<uint32_t> cpus;
  DIR* d = opendir(Path("per_cpu").c_str());
  if (d == nullptr) return cpus;
  while (struct dirent* e = readdir(d)) {
    std::string_view name(e->d_name);
    uint32_t cpu = 0;
    if (name.substr(0, 3) == "cpu" && ParseU32(name.substr(3), &cpu)) cpus.push_back(cpu);
  }
  closedir(d);
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

// --- Parsers. ---

std::string ParseSelectedTraceClock(std::string_view text) {
  size_t open = text.find('[');
  if (open == std::string_view::npos) return "";
  size_t close = text.find(']', open);
  if (close == std::string_view::npos) return "";
  return std::string(text.substr(open + 1, close - open - 1));
}

std::vector<std::string> ParseTraceClocks(std::string_view text) {
  std::vector<std::string> clocks;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t')) i++;
    size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\n' && text[i] != '\t') i++;
    std::string_view word = text.substr(start, i - start);
    if (!word.empty() && word.front() == '[' && word.back() == ']' && word.size() >= 2) {
      word = word.substr(1, word.size() - 2);
    }
    if (!word.empty()) clocks.emplace_back(word);
  }
  return clocks;
}

StatusOr<TracefsBufferSize> ParseBufferSize(std::string_view text) {
  TracefsBufferSize size;
  std::string_view v = TrimWhitespace(text);
  size.text = std::string(v);
  if (v == "X") {
    size.per_cpu_differs = true;
    return size;
  }
  // "7 (expanded: 1408)"
  size_t paren = v.find(" (expanded: ");
  if (paren != std::string_view::npos) {
    std::string_view inner = v.substr(paren + std::strlen(" (expanded: "));
    if (inner.empty() || inner.back() != ')' || !ParseU32(inner.substr(0, inner.size() - 1), &size.kb) ||
        !ParseU32(v.substr(0, paren), &size.unexpanded_kb)) {
      return Status::Error("malformed buffer size '" + std::string(v) + "'");
    }
    size.expanded = false;
    return size;
  }
  if (!ParseU32(v, &size.kb)) return Status::Error("malformed buffer size '" + std::string(v) + "'");
  return size;
}

bool StayedAtBootSize(const TracefsBufferSize& before, const TracefsBufferSize& after) {
  return !before.expanded && !before.per_cpu_differs && after.expanded && !after.per_cpu_differs &&
         after.kb == before.unexpanded_kb && after.kb != before.kb;
}

std::vector<std::string> ParseAvailableEvents(std::string_view text) {
  std::vector<std::string> events;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = TrimWhitespace(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == line.size()) continue;
    std::string e(line);
    e[colon] = '/';
    events.push_back(std::move(e));
  }
  return events;
}

}  // namespace sluice
