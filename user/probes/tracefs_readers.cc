#include "user/probes/tracefs_readers.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>

#include "shm/base/file_util.h"
#include "shm/base/string_util.h"

namespace sluice {
namespace {

// Where tracefs is mounted, as a process's fd links show it.
constexpr std::string_view kTracefsMounts[] = {"/sys/kernel/tracing/", "/sys/kernel/debug/tracing/"};

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// "per_cpu/cpuN/trace_pipe_raw", "per_cpu/cpuN/trace_pipe" or "trace_pipe".
bool IsConsumingFile(std::string_view rel) {
  if (rel == "trace_pipe") return true;
  if (!StartsWith(rel, "per_cpu/cpu")) return false;
  rel.remove_prefix(std::string_view("per_cpu/cpu").size());
  const size_t slash = rel.find('/');
  if (slash == 0 || slash == std::string_view::npos) return false;
  for (char c : rel.substr(0, slash)) {
    if (c < '0' || c > '9') return false;
  }
  const std::string_view file = rel.substr(slash + 1);
  return file == "trace_pipe_raw" || file == "trace_pipe";
}

// The parent of the process whose /proc dir is `pid_dir`, from field 4 of
// its stat ("PID (COMM) STATE PPID ..."; COMM may hold spaces and parens,
// so the fields are counted from the last ')'). 0 when it cannot be read.
pid_t ParentPid(const std::string& pid_dir) {
  auto stat = ReadFile(pid_dir + "/stat");
  if (!stat.ok()) return 0;
  const size_t close = stat->rfind(')');
  if (close == std::string::npos) return 0;
  char state = 0;
  int ppid = 0;
  if (sscanf(stat->c_str() + close + 1, " %c %d", &state, &ppid) != 2) return 0;
  return static_cast<pid_t>(ppid);
}

std::string ReadLink(const std::string& path) {
  char buf[4096];
  const ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace

bool ParseTracefsReaderPath(std::string_view path, std::string* instance) {
  for (std::string_view mount : kTracefsMounts) {
    if (!StartsWith(path, mount)) continue;
    std::string_view rel = path.substr(mount.size());
    std::string name;
    if (StartsWith(rel, "instances/")) {
      rel.remove_prefix(std::string_view("instances/").size());
      const size_t slash = rel.find('/');
      if (slash == 0 || slash == std::string_view::npos) return false;
      name = std::string(rel.substr(0, slash));
      rel.remove_prefix(slash + 1);
    }
    if (!IsConsumingFile(rel)) return false;
    *instance = std::move(name);
    return true;
  }
  return false;
}

std::vector<TracefsReader> FindTracefsReaders(pid_t self, const std::string& proc) {
  std::map<std::pair<pid_t, std::string>, TracefsReader> found;
  const std::string self_exe = ReadLink(proc + "/" + std::to_string(self) + "/exe");
  DIR* procs = opendir(proc.c_str());
  if (!procs) return {};
  while (const struct dirent* p = readdir(procs)) {
    char* end = nullptr;
    const long pid = std::strtol(p->d_name, &end, 10);
    if (pid <= 0 || *end != '\0' || pid == self) continue;
    const std::string fd_dir = proc + "/" + p->d_name + "/fd";
    DIR* fds = opendir(fd_dir.c_str());
    if (!fds) continue;  // Gone meanwhile, or not ours to look at.
    // A child of `self` still running self's program is `self` between its
    // fork and its exec (posix_spawn of an --on-rotate hook), with copies of
    // self's files: every file sluice opens in tracefs is O_CLOEXEC, so the
    // copies go at the exec, unread. A child that exec'd (a `cat trace_pipe`
    // it started) is a reader like any other. Its program is looked at
    // before its files: the kernel switches a process's exe before it
    // closes the O_CLOEXEC files, so a child seen as self here cannot have
    // opened one of the files read below itself.
    const std::string dir = proc + "/" + p->d_name;
    if (ParentPid(dir) == self && !self_exe.empty() && ReadLink(dir + "/exe") == self_exe) {
      closedir(fds);
      continue;
    }
    while (const struct dirent* f = readdir(fds)) {
      if (f->d_name[0] == '.') continue;
      std::string instance;
      if (!ParseTracefsReaderPath(ReadLink(fd_dir + "/" + f->d_name), &instance)) continue;
      TracefsReader& r = found[{static_cast<pid_t>(pid), instance}];
      if (r.files == 0) {
        r.pid = static_cast<pid_t>(pid);
        r.instance = instance;
        auto comm = ReadFile(proc + "/" + p->d_name + "/comm");
        r.comm = comm.ok() ? std::string(TrimWhitespace(*comm)) : "?";
      }
      ++r.files;
    }
    closedir(fds);
  }
  closedir(procs);
  std::vector<TracefsReader> readers;
  for (auto& [key, r] : found) readers.push_back(std::move(r));
  return readers;
}

std::vector<TracefsReader> ReadersOfInstance(const std::vector<TracefsReader>& readers,
                                             std::string_view instance) {
  std::vector<TracefsReader> of;
  std::copy_if(readers.begin(), readers.end(), std::back_inserter(of),
               [&](const TracefsReader& r) { return r.instance == instance; });
  return of;
}

std::string DescribeTracefsReaders(const std::vector<TracefsReader>& readers) {
  std::string text;
  for (const TracefsReader& r : readers) {
    if (!text.empty()) text += ", ";
    text += r.comm + " (pid " + std::to_string(r.pid) + ")";
  }
  return text;
}

}  // namespace sluice
