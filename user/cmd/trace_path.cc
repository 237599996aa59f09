#include "user/cmd/trace_path.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "shm/base/errno_message.h"
#include "shm/base/file_util.h"

namespace sluice {

Status CheckTraceReadable(const std::string& path) {
  if (IsDirectory(path)) return Status::Error(path + " is a directory: name a trace file");
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::Error(WithErrno("cannot open " + path, errno) +
                         " (name a trace file, e.g. one `sluice record -o FILE` wrote)");
  }
  close(fd);
  return Status::Ok();
}

}  // namespace sluice
