#include "user/cmd/line_reader.h"

#include <editline/readline.h>

#include <cstdlib>

#include "shm/base/shared_library.h"

namespace sluice {
namespace {

class StreamLineReader : public LineReader {
 public:
  StreamLineReader(FILE* in, bool interactive) : in_(in), interactive_(interactive) {}
  ~StreamLineReader() override { free(line_); }

  std::optional<std::string> ReadLine(const char* prompt) override {
    if (interactive_) {
      fputs(prompt, stdout);
      fflush(stdout);
    }
    const ssize_t length = getline(&line_, &capacity_, in_);
    if (length < 0) return std::nullopt;
    std::string line(line_, static_cast<size_t>(length));
    if (!line.empty() && line.back() == '\n') line.pop_back();
    return line;
  }
  void AddHistory(const std::string&) override {}
  bool interactive() const override { return interactive_; }

 private:
  FILE* in_;
  const bool interactive_;
  char* line_ = nullptr;
  size_t capacity_ = 0;
};

// The part of libedit's readline interface used here, loaded on first use
// (shm/base/shared_library.h says why), with the types its header declares.
struct LibEdit {
  const char** readline_name = nullptr;  // rl_readline_name
  decltype(readline)* read_line = nullptr;
  decltype(using_history)* use_history = nullptr;
  decltype(stifle_history)* limit_history = nullptr;
  decltype(read_history)* load_history = nullptr;
  decltype(write_history)* save_history = nullptr;
  decltype(add_history)* append_history = nullptr;
};

StatusOr<LibEdit> LoadLibEdit() {
  StatusOr<SharedLibrary> library = SharedLibrary::Open("libedit.so.2", "line editing in the query shell",
                                                        "install it with `apt install libedit2`");
  if (!library.ok()) return library.status();
  LibEdit api;
  Status status;
  library->ResolveInto("rl_readline_name", &api.readline_name, &status);
  library->ResolveInto("readline", &api.read_line, &status);
  library->ResolveInto("using_history", &api.use_history, &status);
  library->ResolveInto("stifle_history", &api.limit_history, &status);
  library->ResolveInto("read_history", &api.load_history, &status);
  library->ResolveInto("write_history", &api.save_history, &status);
  library->ResolveInto("add_history", &api.append_history, &status);
  if (!status.ok()) return status;
  return api;
}

class TerminalLineReader : public LineReader {
 public:
  TerminalLineReader(const LibEdit& edit, std::string history_path)
      : edit_(edit), history_path_(std::move(history_path)) {
    *edit_.readline_name = "sluice-query";
    edit_.use_history();
    edit_.limit_history(kHistoryEntries);
    // A missing history file is the first session: nothing to load.
    if (!history_path_.empty()) edit_.load_history(history_path_.c_str());
  }

  std::optional<std::string> ReadLine(const char* prompt) override {
    char* line = edit_.read_line(prompt);
    if (line == nullptr) return std::nullopt;
    std::string text(line);
    free(line);
    return text;
  }
  void AddHistory(const std::string& entry) override {
    edit_.append_history(entry.c_str());
    // Best effort: an unwritable home directory costs the history only.
    if (!history_path_.empty()) edit_.save_history(history_path_.c_str());
  }
  bool interactive() const override { return true; }

 private:
  const LibEdit& edit_;
  std::string history_path_;
};

}  // namespace

std::unique_ptr<LineReader> MakeStreamLineReader(FILE* in, bool interactive) {
  return std::make_unique<StreamLineReader>(in, interactive);
}

StatusOr<std::unique_ptr<LineReader>> MakeTerminalLineReader(const std::string& history_path) {
  // Loaded once per process; the library stays.
  static const StatusOr<LibEdit> edit = LoadLibEdit();
  if (!edit.ok()) return edit.status();
  return std::unique_ptr<LineReader>(std::make_unique<TerminalLineReader>(edit.value(), history_path));
}

}  // namespace sluice
