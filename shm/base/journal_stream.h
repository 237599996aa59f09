// Log priorities for lines written to stderr under systemd. A service's
// stderr is a stream into the journal, which reads a "<N>" prefix (syslog
// priority N; SyslogLevelPrefix=yes, the default) as the line's priority:
// "<3>" lines are errors that `journalctl -p err` shows. On a terminal or in
// a file the prefix would be noise, so it is written only when stderr really
// is the journal: systemd names that stream in JOURNAL_STREAM=<dev>:<inode>
// (systemd.exec(5)), which a child with redirected stderr still inherits, so
// the device and inode are compared, not just the variable's presence.
#ifndef SLUICE_SHM_BASE_JOURNAL_STREAM_H_
#define SLUICE_SHM_BASE_JOURNAL_STREAM_H_

#include <string>

namespace sluice {

// True if `journal_stream` ("<dev>:<inode>", decimal) names the file `fd` is.
bool FdIsJournalStream(int fd, const char* journal_stream);

// "<N>" for syslog priority N (LOG_ERR = 3, ...) when stderr is the journal,
// else "". Looked up once.
std::string StderrPriorityPrefix(int syslog_priority);

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_JOURNAL_STREAM_H_
