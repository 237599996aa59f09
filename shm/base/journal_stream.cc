#include "shm/base/journal_stream.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <string_view>

#include "shm/base/string_util.h"

namespace sluice {

bool FdIsJournalStream(int fd, const char* journal_stream) {
  if (journal_stream == nullptr) return false;
  std::string_view s(journal_stream);
  size_t colon = s.find(':');
  uint64_t dev = 0, ino = 0;
  if (colon == std::string_view::npos || !ParseU64(s.substr(0, colon), &dev) ||
      !ParseU64(s.substr(colon + 1), &ino))
    return false;
  struct stat st;
  if (fstat(fd, &st) != 0) return false;
  return static_cast<uint64_t>(st.st_dev) == dev && static_cast<uint64_t>(st.st_ino) == ino;
}

std::string StderrPriorityPrefix(int syslog_priority) {
  static const bool to_journal = FdIsJournalStream(STDERR_FILENO, getenv("JOURNAL_STREAM"));
  if (!to_journal || syslog_priority < 0 || syslog_priority > 7) return "";
  return "<" + std::to_string(syslog_priority) + ">";
}

}  // namespace sluice
