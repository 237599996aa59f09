#include "shm/base/errno_message.h"

#include <cstring>

namespace sluice {

std::string ErrnoMessage(int err) { return std::strerror(err < 0 ? -err : err); }

std::string WithErrno(std::string_view what, int err) {
  std::string text(what);
  text += ": ";
  text += ErrnoMessage(err);
  return text;
}

}  // namespace sluice
