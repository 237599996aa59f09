// Where the query shell's lines come from: a terminal, through libedit (line
// editing, history kept in a file across sessions), or any other stream (a
// pipe, a file: no prompts, no history), so the shell runs the same in a
// terminal, in a script and in a test.
#ifndef SLUICE_USER_CMD_LINE_READER_H_
#define SLUICE_USER_CMD_LINE_READER_H_

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "shm/base/status.h"

namespace sluice {

class LineReader {
 public:
  virtual ~LineReader() = default;
  // The next line, without its '\n'; nullopt at the end of the input (for a
  // terminal: Ctrl-D on an empty line). `prompt` is shown on a terminal only.
  virtual std::optional<std::string> ReadLine(const char* prompt) = 0;
  // Records a complete entry (a statement, perhaps of several lines, or a
  // dot-command) for recall with the arrow keys.
  virtual void AddHistory(const std::string& entry) = 0;
  // A person is typing: prompts are shown and positions are counted from
  // each entry's first line rather than from the start of the input.
  virtual bool interactive() const = 0;
};

// Lines of `in`, which stays open and owned by the caller. `interactive`:
// a person types them on a terminal without line editing (libedit missing),
// so prompts are printed.
std::unique_ptr<LineReader> MakeStreamLineReader(FILE* in, bool interactive = false);

// Lines typed on the terminal on stdin, edited with libedit. History is
// loaded from `history_path` and saved there after every entry (so a session
// ended by Ctrl-C keeps it), at most kHistoryEntries entries; an empty path
// keeps no history. Only one exists at a time (libedit's readline interface
// is global). libedit is loaded by the first call (shm/base/shared_library.h
// says why); when it cannot be, the error is one line naming the package.
StatusOr<std::unique_ptr<LineReader>> MakeTerminalLineReader(const std::string& history_path);

inline constexpr int kHistoryEntries = 2000;

}  // namespace sluice

#endif  // SLUICE_USER_CMD_LINE_READER_H_
