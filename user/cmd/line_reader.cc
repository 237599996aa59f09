#include "user/cmd/line_reader.h"

#include <editline/readline.h>

#include <cstdlib>

namespace sluice {
namespace {

class StreamLineReader : public LineReader {
 public:
  explicit StreamLineReader(FILE* in) : in_(in) {}
  ~StreamLineReader() override { free(line_); }

  std::optional<std::string> ReadLine(const char*) override {
    const ssize_t length = getline(&line_, &capacity_, in_);
    if (length < 0) return std::nullopt;
    std::string line(line_, static_cast<size_t>(length));
    if (!line.empty() && line.back() == '\n') line.pop_back();
    return line;
  }
  void AddHistory(const std::string&) override {}
  bool interactive() const override { return false; }

 private:
  FILE* in_;
  char* line_ = nullptr;
  size_t capacity_ = 0;
};

class TerminalLineReader : public LineReader {
 public:
  explicit TerminalLineReader(std::string history_path) : history_path_(std::move(history_path)) {
    rl_readline_name = "sluice-query";
    using_history();
    stifle_history(kHistoryEntries);
    // A missing history file is the first session: nothing to load.
    if (!history_path_.empty()) read_history(history_path_.c_str());
  }

  std::optional<std::string> ReadLine(const char* prompt) override {
    char* line = readline(prompt);
    if (line == nullptr) return std::nullopt;
    std::string text(line);
    free(line);
    return text;
  }
  void AddHistory(const std::string& entry) override {
    add_history(entry.c_str());
    // Best effort: an unwritable home directory costs the history only.
    if (!history_path_.empty()) write_history(history_path_.c_str());
  }
  bool interactive() const override { return true; }

 private:
  std::string history_path_;
};

}  // namespace

std::unique_ptr<LineReader> MakeStreamLineReader(FILE* in) {
  return std::make_unique<StreamLineReader>(in);
}

std::unique_ptr<LineReader> MakeTerminalLineReader(const std::string& history_path) {
  return std::make_unique<TerminalLineReader>(history_path);
}

}  // namespace sluice
