// errno as text, for the one-line errors sluice prints ("cannot open X: No such
// file or directory"). One place so every message reads the same way.
#ifndef SLUICE_SHM_BASE_ERRNO_MESSAGE_H_
#define SLUICE_SHM_BASE_ERRNO_MESSAGE_H_

#include <string>
#include <string_view>

namespace sluice {

// strerror(err). libbpf returns errors as negative errno values: those are
// accepted too.
std::string ErrnoMessage(int err);

// "<what>: <strerror(err)>", e.g. WithErrno("cannot open " + path, errno).
std::string WithErrno(std::string_view what, int err);

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_ERRNO_MESSAGE_H_
