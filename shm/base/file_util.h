// Whole-file reads for the small text files sluice reads: tracefs control and
// format files, /proc, sysfs, configs.
#ifndef SLUICE_SHM_BASE_FILE_UTIL_H_
#define SLUICE_SHM_BASE_FILE_UTIL_H_

#include <cstddef>
#include <string>

#include "shm/base/status.h"

namespace sluice {

// The whole content of `path`, read with read(2) until EOF (so tracefs and
// /proc files, whose stat size is 0, read whole). Fails with "cannot open
// <path> (<errno text>)" or "cannot read ...", or when the file is larger
// than `max_bytes`.
StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes = SIZE_MAX);

bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_FILE_UTIL_H_
