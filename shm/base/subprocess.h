// Running a helper program and waiting for it (atrace on Android): argv[0]
// is a path (no PATH search), stdout and stderr are captured together.
#ifndef SLUICE_SHM_BASE_SUBPROCESS_H_
#define SLUICE_SHM_BASE_SUBPROCESS_H_

#include <functional>
#include <string>
#include <vector>

namespace sluice {

// Runs argv (argv[0] a path), returns its exit status (-1 if it could not run
// or was killed by a signal) and the first 4 KiB of its output in `output`.
int RunCommandAndWait(const std::vector<std::string>& argv, std::string* output);

// RunCommandAndWait's signature, for code that lets tests substitute a fake.
using CommandRunner = std::function<int(const std::vector<std::string>& argv, std::string* output)>;

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_SUBPROCESS_H_
