#include "user/probes/tracefs_cleanup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>

#include "shm/base/errno_message.h"
#include "shm/base/file_util.h"
#include "shm/base/process_identity.h"
#include "shm/base/scoped_fd.h"
#include "user/probes/ftrace/ftrace_cpu_stats.h"
#include "user/probes/tracefs.h"
#include "user/probes/tracefs_state_file.h"

namespace sluice {
namespace {

struct FoundState {
  std::string path;
  TracefsState state;
};

std::string Owner(const TracefsState& s) {
  return s.owner_name + " pid " + std::to_string(s.owner.pid);
}

std::string Where(const TracefsChanges& c) {
  return c.instance_name.empty() ? c.tracefs_root : c.tracefs_root + "/instances/" + c.instance_name;
}

bool SameInstance(const TracefsChanges& a, const TracefsChanges& b) {
  return a.tracefs_root == b.tracefs_root && a.instance_name == b.instance_name;
}

// Events the kernel buffer holds that nobody read: the dead owner's readers
// are gone, and the next trace starts by clearing the buffer.
uint64_t UnreadEvents(const Tracefs& fs) {
  uint64_t entries = 0;
  for (uint32_t cpu : fs.ListPerCpuDirs()) {
    auto stats = ReadFtraceCpuStats(fs, cpu);
    if (stats.ok()) entries += stats->entries;
  }
  return entries;
}

// Holds an exclusive flock on <dir>/.lock for its lifetime.
class DirLock {
 public:
  explicit DirLock(const std::string& dir) {
    fd_.reset(open((dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!fd_.valid()) {
      error_ = Status::Error("cannot open " + dir + "/.lock (" + ErrnoMessage(errno) + ")");
      return;
    }
    while (flock(fd_.get(), LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      error_ = Status::Error("cannot lock " + dir + "/.lock (" + ErrnoMessage(errno) + ")");
      return;
    }
  }
  const Status& error() const { return error_; }

 private:
  ScopedFd fd_;  // Closing it releases the lock.
  Status error_;
};

// Undoes one dead owner's changes; adds its line to the report.
void Restore(const FoundState& found, const TracefsCleanupOptions& options,
             TracefsCleanupReport* out) {
  TracefsState state = found.state;
  TracefsChanges& c = state.changes;
  const std::string who = Owner(state) + " (no longer running)";
  TracefsOptions fs_options;
  fs_options.root = c.tracefs_root;
  fs_options.instance_name = c.instance_name;
  fs_options.create_instance = false;
  fs_options.allow_mount = false;
  auto fs = Tracefs::Open(fs_options);
  if (!fs.ok()) {
    if (!c.instance_name.empty() && PathExists(c.tracefs_root + "/tracing_on") &&
        !IsDirectory(Where(c))) {
      // Someone removed the instance: nothing of it is left to undo.
      unlink(found.path.c_str());
      out->restored.push_back("tracefs left by " + who + ": " + Where(c) +
                              " is gone already, nothing to restore");
      return;
    }
    out->errors.push_back("cannot restore tracefs left by " + who + " (" + found.path +
                          "): " + fs.status().message());
    return;
  }
  const uint64_t unread = UnreadEvents(**fs);
  TracefsUndoReport report;
  UndoEventChanges(**fs, &c, options.run_command, &report);
  UndoSettingChanges(**fs, &c, &report);
  if (c.created_instance) {
    if (rmdir((*fs)->dir().c_str()) == 0 || errno == ENOENT) {
      report.done.push_back("removed instance " + c.instance_name);
      c.created_instance = false;
    } else {
      report.errors.push_back("cannot remove " + (*fs)->dir() + " (" + ErrnoMessage(errno) +
                              "): rmdir it by hand");
    }
  }
  Status saved = WriteTracefsStateFile(found.path, state);
  if (!saved.ok()) report.errors.push_back(saved.message());
  std::string line = "restored tracefs left by " + who + " in " + Where(found.state.changes) +
                     ": " + report.Summary();
  if (unread != 0) {
    line += "; its ring buffer held " + std::to_string(unread) + " events nobody had read (lost)";
  }
  if (!report.errors.empty()) {
    line += c.empty() ? "" : "; what failed stays in " + found.path + " for the next cleanup";
    out->errors.push_back(line);
  } else {
    out->restored.push_back(line);
  }
}

}  // namespace

TracefsCleanupReport RestoreTracefsLeftByDeadOwners(const std::string& state_dir,
                                                    const TracefsCleanupOptions& options) {
  TracefsCleanupReport out;
  if (!IsDirectory(state_dir)) return out;
  if (Status st = CheckTracefsStateDir(state_dir); !st.ok()) {
    out.errors.push_back("tracefs state not restored: " + st.message());
    return out;
  }
  DirLock lock(state_dir);
  if (!lock.error().ok()) {
    out.errors.push_back("tracefs state not restored: " + lock.error().message());
    return out;
  }
  auto self = ReadProcessIdentity(getpid());
  const std::string boot_id = self.ok() ? self->boot_id : std::string();

  std::vector<std::string> names;
  if (DIR* d = opendir(state_dir.c_str())) {
    while (struct dirent* e = readdir(d)) names.emplace_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  std::vector<FoundState> running, dead;
  for (const std::string& name : names) {
    uint32_t pid = 0;
    uint64_t start_time = 0;
    bool tmp = false;
    if (!ParseTracefsStateFileName(name, &pid, &start_time, &tmp)) continue;
    const std::string path = state_dir + "/" + name;
    if (tmp) {
      // Written by an owner that died before renaming it: never acted on.
      if (!IsProcessRunning({pid, start_time, boot_id})) unlink(path.c_str());
      continue;
    }
    auto state = ReadTracefsStateFile(path);
    if (!state.ok()) {
      out.errors.push_back("cannot use tracefs state file " + state.status().message() +
                           ": nothing restored from it; check tracefs by hand, then delete it");
      continue;
    }
    if (!boot_id.empty() && state->owner.boot_id != boot_id) {
      unlink(path.c_str());  // From an earlier boot: tracefs was reset since.
      continue;
    }
    (IsProcessRunning(state->owner) ? running : dead).push_back({path, std::move(state).value()});
  }
  for (const FoundState& r : running) {
    out.running.push_back("tracefs in " + Where(r.state.changes) + " is changed by " +
                          Owner(r.state) + ", which is running: left alone");
  }
  std::sort(dead.begin(), dead.end(), [](const FoundState& a, const FoundState& b) {
    return a.state.created_boot_ns > b.state.created_boot_ns;
  });
  for (const FoundState& d : dead) {
    auto later = std::find_if(running.begin(), running.end(), [&](const FoundState& r) {
      return SameInstance(r.state.changes, d.state.changes) &&
             r.state.created_boot_ns > d.state.created_boot_ns;
    });
    if (later != running.end()) {
      out.deferred.push_back("tracefs left by " + Owner(d.state) + " (no longer running) in " +
                             Where(d.state.changes) + " is restored later: " + Owner(later->state) +
                             " (running) changed it since and puts back what it found when it "
                             "ends; then run sluice-probes --cleanup (kept in " + d.path + ")");
      continue;
    }
    Restore(d, options, &out);
  }
  return out;
}

}  // namespace sluice
