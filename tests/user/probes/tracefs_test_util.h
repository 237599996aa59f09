// The tracefs settings sluice may touch, read as comparable text, so kernel
// tests can check that a recorder leaves tracefs as it found it.
#ifndef SLUICE_TESTS_USER_PROBES_TRACEFS_TEST_UTIL_H_
#define SLUICE_TESTS_USER_PROBES_TRACEFS_TEST_UTIL_H_

#include <dirent.h>

#include <algorithm>
#include <string>
#include <vector>

#include "shm/base/file_util.h"
#include "user/probes/ftrace/ftrace_format.h"
#include "user/probes/tracefs.h"

namespace sluice::testing {

inline std::string ReadFileOr(const std::string& path, const std::string& fallback = "<missing>") {
  auto text = ReadFile(path);
  return text.ok() ? *text : fallback;
}

struct TracefsState {
  std::string tracing_on, buffer_size_kb, trace_clock, set_event, instances;
  bool operator==(const TracefsState&) const = default;
  std::string ToString() const {
    return "tracing_on=" + tracing_on + " buffer_size_kb=" + buffer_size_kb +
           " trace_clock=" + trace_clock + " set_event=[" + set_event + "] instances=[" +
           instances + "]";
  }
};

// buffer_size_kb as the per-CPU size the buffer has once expanded: an
// unexpanded root buffer shows "7 (expanded: 1408)", and the kernel rounds
// 1408 KiB up to whole pages of header_page's data size (354 x 4080 bytes,
// shown as 1410 once expanded). "X" when CPUs differ, "?" if unreadable.
inline std::string NormalizedBufferSizeKb(const std::string& dir) {
  auto size = ParseBufferSize(ReadFileOr(dir + "/buffer_size_kb"));
  if (!size.ok()) return "?";
  if (size->per_cpu_differs) return "X";
  uint64_t kb = size->kb;
  auto header = FtraceFormatTable::ParseHeaders(ReadFileOr(dir + "/events/header_page"),
                                                ReadFileOr(dir + "/events/header_event"));
  if (!size->expanded && header.ok() && header->data_size > 0) {
    const uint64_t data = header->data_size;
    kb = (kb * 1024 + data - 1) / data * data / 1024;
  }
  return std::to_string(kb);
}

inline TracefsState ReadTracefsState(const std::string& dir = std::string(Tracefs::kDefaultRoot)) {
  TracefsState s;
  s.tracing_on = ReadFileOr(dir + "/tracing_on");
  s.buffer_size_kb = NormalizedBufferSizeKb(dir);
  s.trace_clock = ReadFileOr(dir + "/trace_clock");
  s.set_event = ReadFileOr(dir + "/set_event");
  std::vector<std::string> names;
  if (DIR* d = opendir((dir + "/instances").c_str())) {
    while (struct dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) s.instances += n + " ";
  return s;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_USER_PROBES_TRACEFS_TEST_UTIL_H_
