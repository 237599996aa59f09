// Whole-file reads for the small text files sluice reads (tracefs control and
// format files, /proc, sysfs, configs), and whole-file atomic writes.
#ifndef SLUICE_SHM_BASE_FILE_UTIL_H_
#define SLUICE_SHM_BASE_FILE_UTIL_H_

#include <sys/types.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "shm/base/status.h"

namespace sluice {

class ScopedFd;

// The whole content of `path`, read with read(2) until EOF (so tracefs and
// /proc files, whose stat size is 0, read whole). Fails with "cannot open
// <path> (<errno text>)" or "cannot read ...", or when the file is larger
// than `max_bytes`.
StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes = SIZE_MAX);

// Reads again a small file that is read over and over (/proc/loadavg at each
// flush, a CPU list at each poll) with one pread(2) at offset 0 into `buf`,
// not ReadFile's open, reads to EOF and close. `fd` keeps the file open between
// calls; it is opened on the first. /proc and sysfs make such a file afresh
// at each read from offset 0. Returns the bytes read, a view of `buf`; fails
// with "cannot open <path> (...)" or "cannot read ...". A result that fills
// `buf` may be cut short: the caller reads the file whole with ReadFile then.
StatusOr<std::string_view> PreadFromStart(const std::string& path, ScopedFd* fd, std::span<char> buf);

// Replaces `path` with `contents` (mode `mode`) so that a reader sees the
// old file or the new one, never a part: the bytes go to `path`.tmp, which is
// then renamed over `path`. No fsync: for state that need not outlive a
// reboot (files under /run).
Status WriteFileAtomically(const std::string& path, std::string_view contents, mode_t mode = 0600);

bool PathExists(const std::string& path);
bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_FILE_UTIL_H_
