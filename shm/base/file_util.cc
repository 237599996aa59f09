#include "shm/base/file_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>

#include "shm/base/errno_message.h"
#include "shm/base/scoped_fd.h"

namespace sluice {

StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Status::Error("cannot open " + path + " (" + ErrnoMessage(errno) + ")");
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::Error("cannot read " + path + " (" + ErrnoMessage(errno) + ")");
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      return Status::Error(path + " is larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  return out;
}

StatusOr<std::string_view> PreadFromStart(const std::string& path, ScopedFd* fd, std::span<char> buf) {
  if (!fd->valid()) {
    fd->reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd->valid()) return Status::Error("cannot open " + path + " (" + ErrnoMessage(errno) + ")");
  }
  ssize_t n;
  do {
    n = pread(fd->get(), buf.data(), buf.size(), 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return Status::Error("cannot read " + path + " (" + ErrnoMessage(errno) + ")");
  return std::string_view(buf.data(), static_cast<size_t>(n));
}

Status WriteFileAtomically(const std::string& path, std::string_view contents, mode_t mode) {
  const std::string tmp = path + ".tmp";
  ScopedFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd.valid()) return Status::Error("cannot create " + tmp + " (" + ErrnoMessage(errno) + ")");
  size_t written = 0;
  while (written < contents.size()) {
    ssize_t n = write(fd.get(), contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status err = Status::Error("cannot write " + tmp + " (" +
                                 ErrnoMessage(n < 0 ? errno : ENOSPC) + ")");
      fd.reset();
      unlink(tmp.c_str());
      return err;
    }
    written += static_cast<size_t>(n);
  }
  // Closed by hand and checked, before the rename: close(2) can be where a
  // failed write shows (NFS, quotas), and such a file must not replace `path`.
  if (close(fd.release()) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
    Status err = Status::Error("cannot replace " + path + " (" + ErrnoMessage(errno) + ")");
    unlink(tmp.c_str());
    return err;
  }
  return Status::Ok();
}

bool PathExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace sluice
