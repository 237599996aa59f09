#include "user/probes/ftrace/ftrace_reader_control.h"

#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "shm/base/errno_message.h"

namespace sluice {

Status FtraceReaderControl::Open() {
  wake_fd_.reset(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd_.valid()) return Status::Error("cannot create an eventfd (" + ErrnoMessage(errno) + ")");
  return Status::Ok();
}

void FtraceReaderControl::Kick() {
  if (!wake_fd_.valid()) return;
  uint64_t one = 1;
  // EAGAIN means the counter is already non-zero: the worker wakes anyway.
  (void)!write(wake_fd_.get(), &one, sizeof(one));
}

void FtraceReaderControl::DrainWakeups() {
  uint64_t value;
  (void)!read(wake_fd_.get(), &value, sizeof(value));
}

void FtraceReaderControl::SetPaused(bool paused) {
  paused_.store(paused, std::memory_order_release);
  Kick();
}

void FtraceReaderControl::RequestStop() {
  stop_.store(true, std::memory_order_release);
  Kick();
}

}  // namespace sluice
