#include "shm/base/command_line.h"

#include <syslog.h>

#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

#include "shm/base/journal_stream.h"

namespace sluice {
namespace {

constexpr char kHelp[] = "help";

// "--name=value" -> "--name".
std::string OptionAsTyped(const char* arg) {
  std::string_view s(arg);
  return std::string(s.substr(0, s.find('=')));
}

// The message for getopt_long's '?' (unknown option, ambiguous prefix, value
// given to a flag) or ':' (missing value). getopt leaves optind just past the
// offending argument for long options and for a short option ending its
// cluster; inside a cluster ("-xq") only optopt names it.
std::string GetoptError(int c, char** argv, const char* short_options,
                        const struct option* long_options) {
  const char* last = optind > 0 ? argv[optind - 1] : "";
  const bool long_form = std::string_view(last).starts_with("--");
  const bool unknown_short =
      optopt > 0 && optopt < kFirstLongOnly && std::strchr(short_options, optopt) == nullptr;
  if (c == ':') {
    if (long_form) return OptionAsTyped(last) + " needs a value";
    return std::string("-") + static_cast<char>(optopt) + " needs a value";
  }
  if (unknown_short) return std::string("unknown option '-") + static_cast<char>(optopt) + "'";
  if (optopt != 0) return OptionAsTyped(last) + " takes no value";
  // optopt == 0: a long name that matches no option, or several.
  std::string typed = OptionAsTyped(last);
  std::vector<std::string> candidates;
  for (const struct option* o = long_options; o && o->name; o++) {
    if (std::string_view(o->name).starts_with(std::string_view(typed).substr(2)))
      candidates.push_back(std::string("--") + o->name);
  }
  if (candidates.size() < 2) return "unknown option '" + typed + "'";
  std::string list;
  for (const std::string& name : candidates) list += (list.empty() ? "" : ", ") + name;
  return "ambiguous option '" + typed + "' (" + list + ")";
}

}  // namespace

Status ParseCommandLine(int argc, char** argv, const char* short_options,
                        const struct option* long_options,
                        const std::function<Status(const CommandLineArg&)>& handle,
                        OperandOrder order) {
  // "-": operands come back in order (as kOperand) instead of being permuted
  // to the end, so `record EVENT -o F` and `trace-check TRACE --markers=5`
  // work even with POSIXLY_CORRECT set, and argv stays as given.
  // "+": stop at the first operand (the rest go to the loop below).
  // ":": getopt prints nothing and reports a missing value as ':', so the
  // one-line message is ours.
  const std::string optstring =
      std::string(order == OperandOrder::kAnywhere ? "-:" : "+:") + short_options;
  optind = 0;  // glibc: re-initialise all of getopt's state.
  opterr = 0;
  for (;;) {
    int index = -1;
    const int c = getopt_long(argc, argv, optstring.c_str(), long_options, &index);
    if (c == -1) break;
    if (c == '?' || c == ':') return Status::Error(GetoptError(c, argv, short_options, long_options));
    CommandLineArg arg;
    arg.id = c;
    arg.value = optarg;
    if (c == kOperand) arg.index = optind - 1;  // getopt stepped past it.
    if (c != kOperand) {
      arg.name = index >= 0 ? std::string("--") + long_options[index].name
                            : std::string("-") + static_cast<char>(c);
    }
    SLUICE_RETURN_IF_ERROR(handle(arg));
  }
  // After "--" getopt stops; the rest are operands.
  for (int i = optind; i < argc; i++) {
    CommandLineArg arg;
    arg.id = kOperand;
    arg.value = argv[i];
    arg.index = i;
    SLUICE_RETURN_IF_ERROR(handle(arg));
  }
  return Status::Ok();
}

Status HelpRequested() { return Status::Error(kHelp); }

bool IsHelpRequested(const Status& status) { return !status.ok() && status.message() == kHelp; }

int CommandLineExit(const Status& status, const char* command, const char* usage) {
  if (IsHelpRequested(status)) {
    fputs(usage, stdout);
    return 0;
  }
  // A unit's ExecStart= with a bad option: an error in the journal.
  fprintf(stderr, "%s%s: %s (see %s --help)\n", StderrPriorityPrefix(LOG_ERR).c_str(), command,
          status.message().c_str(), command);
  return 2;
}

}  // namespace sluice
