// ScopedFd: the one owner of a file descriptor, which closes it when the owner
// goes away. Move-only, so an fd has exactly one owner and every early return
// closes it; release() hands it on (to a caller, to SCM_RIGHTS, or to an
// explicit close whose error matters: close(2) is where NFS and some other
// filesystems report a failed write, and the destructor ignores that error).
//
// In the base layer because shm/, service/ and user/ all own fds.
#ifndef SLUICE_SHM_BASE_SCOPED_FD_H_
#define SLUICE_SHM_BASE_SCOPED_FD_H_

#include <unistd.h>

#include <utility>

namespace sluice {

// Owns a file descriptor; closes it on destruction. Move-only. -1 is "none".
class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(other.release()) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept {
    reset(other.release());
    return *this;
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership: returns the fd (or -1) and leaves this empty.
  int release() { return std::exchange(fd_, -1); }
  // Closes the fd owned (its error ignored), then owns `fd`.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_SCOPED_FD_H_
