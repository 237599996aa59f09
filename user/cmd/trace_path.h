// Checks on a TRACE operand made before a long import, so the message names
// the path and the fix.
#ifndef SLUICE_USER_CMD_TRACE_PATH_H_
#define SLUICE_USER_CMD_TRACE_PATH_H_

#include <string>

#include "shm/base/status.h"

namespace sluice {

// Ok if `path` is a file this process can open for reading.
Status CheckTraceReadable(const std::string& path);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_TRACE_PATH_H_
