// The tracefs settings sluice may touch, read as comparable text, so kernel
// tests can check that a recorder leaves tracefs as it found it.
#ifndef SLUICE_TESTS_USER_PROBES_TRACEFS_TEST_UTIL_H_
#define SLUICE_TESTS_USER_PROBES_TRACEFS_TEST_UTIL_H_

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "shm/base/file_util.h"
#include "shm/base/string_util.h"
#include "user/probes/ftrace/ftrace_format.h"
#include "user/probes/tracefs.h"

namespace sluice::testing {

inline std::string ReadFileOr(const std::string& path, const std::string& fallback = "<missing>") {
  auto text = ReadFile(path);
  return text.ok() ? *text : fallback;
}

struct TracefsState {
  std::string tracing_on, buffer_size_kb, buffer_percent, trace_clock, set_event, instances;
  bool operator==(const TracefsState&) const = default;
  std::string ToString() const {
    return "tracing_on=" + tracing_on + " buffer_size_kb=" + buffer_size_kb + " buffer_percent=" +
           buffer_percent + " trace_clock=" + trace_clock + " set_event=[" + set_event + "] instances=[" +
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
  s.buffer_percent = ReadFileOr(dir + "/buffer_percent");
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

// Writes `text` to a tracefs (or test) file with one write(); `flags` adds
// O_TRUNC (a plain file) or O_APPEND (set_event, to add one event).
inline bool WriteTracefsFile(const std::string& path, const std::string& text,
                             int flags = O_TRUNC) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | flags);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// Writes one trace_marker record on `fd` (of `tracefs`'s top-level
// trace_marker). True when the kernel took it, and also when it refused it
// because the top-level buffer is off (tracing_on 0, as `trace-cmd reset`
// leaves it): the write then fails with EBADF and no ftrace buffer holds it,
// but BPF marker capture, at the write's syscall entry, still sees it (and
// instances with copy_trace_marker get it). Tests started from any tracefs
// state use this rather than expect every write to succeed.
inline bool WriteTraceMarker(int fd, std::string_view text,
                             const std::string& tracefs = std::string(Tracefs::kDefaultRoot)) {
  const ssize_t n = write(fd, text.data(), text.size());
  if (n == static_cast<ssize_t>(text.size())) return true;
  return n < 0 && errno == EBADF && TrimWhitespace(ReadFileOr(tracefs + "/tracing_on", "")) == "0";
}

// Puts back `saved` after a recorder that could not clean up (SIGKILL), so
// the test that killed it leaves tracefs as it found it.
inline void RestoreTracefsState(const TracefsState& saved,
                                const std::string& dir = std::string(Tracefs::kDefaultRoot)) {
  // set_event opened with O_TRUNC disables every event; then re-enable the
  // saved ones line by line.
  EXPECT_TRUE(WriteTracefsFile(dir + "/set_event", "\n", O_TRUNC));
  std::istringstream lines(saved.set_event);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) {
      EXPECT_TRUE(WriteTracefsFile(dir + "/set_event", line + "\n", O_APPEND)) << line;
    }
  }
  std::string clock = ParseSelectedTraceClock(saved.trace_clock);
  if (!clock.empty()) {
    EXPECT_TRUE(WriteTracefsFile(dir + "/trace_clock", clock));
  }
  if (saved.buffer_size_kb != "?" && saved.buffer_size_kb != "X" &&
      NormalizedBufferSizeKb(dir) != saved.buffer_size_kb) {
    EXPECT_TRUE(WriteTracefsFile(dir + "/buffer_size_kb", saved.buffer_size_kb));
  }
  if (saved.buffer_percent != "<missing>") {
    EXPECT_TRUE(WriteTracefsFile(dir + "/buffer_percent", std::string(TrimWhitespace(saved.buffer_percent))));
  }
  EXPECT_TRUE(
      WriteTracefsFile(dir + "/tracing_on", std::string(TrimWhitespace(saved.tracing_on))));
}

// True if this kernel maps per-CPU ring buffers into user space (Linux
// 6.10+; what sluice's mapped read path needs): the meta page of
// per_cpu/cpu<cpu>/trace_pipe_raw under `dir` can be mapped. Unmapped at
// once; while mapped the kernel refuses to resize that buffer, so call it
// with the kernel-test lock held, as every kernel test runs.
inline bool KernelMapsRingBuffers(const std::string& dir = std::string(Tracefs::kDefaultRoot),
                                  uint32_t cpu = 0) {
  const int fd = open((dir + "/per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw").c_str(),
                      O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* meta = mmap(nullptr, page, PROT_READ, MAP_SHARED, fd, 0);
  const bool maps = meta != MAP_FAILED;
  if (maps) munmap(meta, page);
  close(fd);
  return maps;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_USER_PROBES_TRACEFS_TEST_UTIL_H_
