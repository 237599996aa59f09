// WakeFd: an eventfd that one thread (or a signal handler) sets and another
// waits on with poll(), beside other fds, with no timeout. It replaces the
// periodic look at a flag ("stop requested?", "disconnected?") that woke a
// waiting thread a few times a second for nothing: a recorder at rest then
// costs no CPU until something happens (docs/PERFORMANCE.md, "Sluice at
// rest").
//
// Wake() is async-signal-safe (one write(2)) and may be called from any
// thread, any number of times; the counts add up in the kernel until
// Drain() reads them. The fd stays readable until drained: a waiter that
// handles the event drains it, or every later poll() returns at once.
#ifndef SLUICE_SHM_BASE_WAKE_FD_H_
#define SLUICE_SHM_BASE_WAKE_FD_H_

#include "shm/base/scoped_fd.h"
#include "shm/base/status.h"

namespace sluice {

class WakeFd {
 public:
  // Opens the eventfd (close-on-exec, nonblocking).
  static StatusOr<WakeFd> Create();
  WakeFd() = default;

  // The fd to poll for POLLIN; -1 before Create().
  int fd() const { return fd_.get(); }
  void Wake() const;
  // Reads the count, so that poll() blocks again; true if it was set.
  bool Drain() const;
  // Polls the fd alone for up to `timeout_ms` (-1: no limit); true, drained,
  // if it was set.
  bool Wait(int timeout_ms) const;
  // Polls this fd and `other_fd` (-1: none) for up to `timeout_ms` (-1: no
  // limit). kOther when `other_fd` is readable (it is not read: its owner
  // drains it); kWoken, drained, when only this one was set.
  enum class WaitResult { kWoken, kOther, kTimeout };
  WaitResult WaitWith(int other_fd, int timeout_ms) const;

 private:
  explicit WakeFd(int fd) : fd_(fd) {}
  ScopedFd fd_;
};

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_WAKE_FD_H_
