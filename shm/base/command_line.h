// Command lines: every sluice binary and subcommand parses its argv with
// glibc's getopt_long through ParseCommandLine, so all of them take the same
// forms and fail the same way:
//
//   --name=value, --name value, -t10s, -t 10s, -qt 10s, unique prefixes of
//   long names (--out for --output if unambiguous), "--" ends the options;
//   operands (positional arguments) may come before, between or after the
//   options and are handed over in order.
//
// Errors are one line naming the option as typed ("unknown option
// '--frobnicate'", "-t needs a value", "--bpf takes no value"); the caller
// adds "(see <command> --help)" and exits 2 (CommandLineExit).
//
// getopt_long keeps its state in globals (optind, optarg, and in glibc the
// position inside an option cluster). ParseCommandLine resets them on entry
// (optind = 0, glibc's full re-initialisation), so a subcommand after the
// `sluice` dispatcher, or a test that parses many command lines, starts clean.
// Not thread-safe, like getopt itself: parse on the main thread.
#ifndef SLUICE_SHM_BASE_COMMAND_LINE_H_
#define SLUICE_SHM_BASE_COMMAND_LINE_H_

#include <getopt.h>

#include <functional>
#include <string>

#include "shm/base/status.h"

namespace sluice {

// What getopt_long returns for an operand in the "-" (return in order) mode
// ParseCommandLine uses.
inline constexpr int kOperand = 1;

// For long options without a short form, use vals from here up: never a
// character, so never confused with a short option.
inline constexpr int kFirstLongOnly = 256;

struct CommandLineArg {
  int id = 0;                   // Short option char or long option val; kOperand.
  std::string name;             // As typed, for messages: "-t" or "--time"; "" for an operand.
  const char* value = nullptr;  // The option's value or the operand; nullptr for a flag.
  int index = 0;                // An operand's index in argv (0 for options).
};

enum class OperandOrder {
  kAnywhere,      // Options and operands mixed: `record -o F EVENT -t 5s`.
  kOptionsFirst,  // Options end at the first operand, as for a dispatcher:
                  // `sluice [--help] COMMAND ARGS...`, ARGS being COMMAND's.
};

// Parses argv[1..argc) (argv[0] is the program or subcommand name) with
// getopt_long(short_options, long_options), calling handle() for each option
// and operand in command-line order; stops at the first error, the
// handler's or getopt's. argv is not permuted. short_options is getopt's
// syntax without a leading '+', '-' or ':' (those are ParseCommandLine's).
Status ParseCommandLine(int argc, char** argv, const char* short_options,
                        const struct option* long_options,
                        const std::function<Status(const CommandLineArg&)>& handle,
                        OperandOrder order = OperandOrder::kAnywhere);

// The Status a handler returns for -h/--help: not a failure, but the parse
// stops there (no "unknown option" for what follows).
Status HelpRequested();
bool IsHelpRequested(const Status& status);

// What a command does with a parse that failed: for --help, `usage` on
// stdout and 0; otherwise "<command>: <message> (see <command> --help)" on
// stderr and 2.
int CommandLineExit(const Status& status, const char* command, const char* usage);

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_COMMAND_LINE_H_
