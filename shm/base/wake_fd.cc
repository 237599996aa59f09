#include "shm/base/wake_fd.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include "shm/base/errno_message.h"

namespace sluice {

StatusOr<WakeFd> WakeFd::Create() {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return Status::Error(WithErrno("eventfd", errno));
  return WakeFd(fd);
}

void WakeFd::Wake() const {
  const uint64_t one = 1;
  // Can only fail at a count near 2^64 (EAGAIN), which is still readable.
  ssize_t n = write(fd_.get(), &one, sizeof(one));
  (void)n;
}

bool WakeFd::Drain() const {
  uint64_t count = 0;
  return read(fd_.get(), &count, sizeof(count)) == static_cast<ssize_t>(sizeof(count)) && count != 0;
}

bool WakeFd::Wait(int timeout_ms) const {
  pollfd pfd{fd_.get(), POLLIN, 0};
  if (poll(&pfd, 1, timeout_ms) <= 0) return false;
  return Drain();
}

WakeFd::WaitResult WakeFd::WaitWith(int other_fd, int timeout_ms) const {
  pollfd fds[2] = {{fd_.get(), POLLIN, 0}, {other_fd, POLLIN, 0}};
  if (poll(fds, other_fd >= 0 ? 2 : 1, timeout_ms) <= 0) return WaitResult::kTimeout;
  if (other_fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) return WaitResult::kOther;
  Drain();
  return WaitResult::kWoken;
}

}  // namespace sluice
