#include "service/trace_file_rotation.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "shm/base/errno_message.h"

namespace sluice {

namespace {

constexpr int kIndexDigits = 6;

// The index of `name` if it is STEM.NNNNNN EXT (finished or .recording).
bool ParseIndex(std::string_view name, const FileRotationOptions& o, uint64_t* index) {
  const std::string prefix = o.stem + ".";
  if (name.size() < prefix.size() + kIndexDigits || name.substr(0, prefix.size()) != prefix) return false;
  std::string_view digits = name.substr(prefix.size(), kIndexDigits);
  for (char c : digits)
    if (c < '0' || c > '9') return false;
  std::string_view rest = name.substr(prefix.size() + kIndexDigits);
  if (rest != o.extension && rest != o.extension + kRotatingFileSuffix) return false;
  *index = std::strtoull(std::string(digits).c_str(), nullptr, 10);
  return true;
}

}  // namespace

TraceFileRotation::TraceFileRotation(ScopedFd directory, FileRotationOptions options, uid_t uid,
                                     gid_t gid)
    : directory_(std::move(directory)), options_(std::move(options)), owner_uid_(uid), owner_gid_(gid) {}

StatusOr<TraceFileRotation> TraceFileRotation::Create(ScopedFd directory, FileRotationOptions options,
                                                       uid_t owner_uid, gid_t owner_gid) {
  struct stat st;
  if (!directory.valid() || fstat(directory.get(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::Error("rotation needs the directory the files go in (an O_DIRECTORY fd)");
  if (options.stem.empty() || options.stem.find('/') != std::string::npos ||
      options.extension.find('/') != std::string::npos)
    return Status::Error("rotation file names need a stem without '/' (got '" + options.stem + "')");
  TraceFileRotation rotation(std::move(directory), std::move(options), owner_uid, owner_gid);
  rotation.next_index_ = rotation.HighestIndexInDirectory() + 1;
  return rotation;
}

std::string TraceFileRotation::FinishedName(uint64_t index) const {
  char digits[32];
  snprintf(digits, sizeof digits, "%0*" PRIu64, kIndexDigits, index);
  return options_.stem + "." + digits + options_.extension;
}

uint64_t TraceFileRotation::HighestIndexInDirectory() const {
  int fd = openat(directory_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return 0;
  DIR* dir = fdopendir(fd);
  if (!dir) {
    close(fd);
    return 0;
  }
  uint64_t highest = 0;
  while (dirent* entry = readdir(dir)) {
    uint64_t index;
    if (ParseIndex(entry->d_name, options_, &index) && index > highest) highest = index;
  }
  closedir(dir);
  return highest;
}

StatusOr<ScopedFd> TraceFileRotation::OpenNext(std::string* name) {
  *name = FinishedName(next_index_) + kRotatingFileSuffix;
  ScopedFd fd(openat(directory_.get(), name->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (!fd.valid())
    return Status::Error("cannot create the next trace file " + *name + ": " + ErrnoMessage(errno));
  // The service as root writes a user's files: they are the user's.
  if (geteuid() == 0 && owner_uid_ != static_cast<uid_t>(-1) && owner_uid_ != 0) {
    if (fchown(fd.get(), owner_uid_, owner_gid_) != 0) {
      const int err = errno;
      unlinkat(directory_.get(), name->c_str(), 0);
      return Status::Error("cannot give " + *name + " to uid " + std::to_string(owner_uid_) + ": " +
                           ErrnoMessage(err));
    }
  }
  next_index_++;
  return fd;
}

StatusOr<std::string> TraceFileRotation::Finish(const std::string& recording_name) {
  const size_t suffix = sizeof kRotatingFileSuffix - 1;
  if (recording_name.size() <= suffix) return Status::Error("no trace file is being written");
  const std::string finished = recording_name.substr(0, recording_name.size() - suffix);
  if (renameat(directory_.get(), recording_name.c_str(), directory_.get(), finished.c_str()) != 0)
    return Status::Error("cannot rename " + recording_name + " to " + finished + ": " + ErrnoMessage(errno) +
                         " (the trace stays under its .recording name)");
  files_finished_++;
  finished_.push_back(finished);
  DeleteBeyondKeep();
  return finished;
}

void TraceFileRotation::Abandon(const std::string& recording_name) {
  unlinkat(directory_.get(), recording_name.c_str(), 0);
}

void TraceFileRotation::DeleteBeyondKeep() {
  if (options_.keep == 0) return;
  while (finished_.size() > options_.keep) {
    const std::string oldest = finished_.front();
    finished_.pop_front();
    if (unlinkat(directory_.get(), oldest.c_str(), 0) == 0 || errno == ENOENT) {
      files_deleted_++;
    } else {
      keep_error_ = "cannot delete " + oldest + " (--keep " + std::to_string(options_.keep) + "): " +
                    ErrnoMessage(errno);
    }
  }
}

}  // namespace sluice
