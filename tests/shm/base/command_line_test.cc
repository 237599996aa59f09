// Unit tests for shm/base/command_line.h: the getopt_long forms every binary
// accepts, the one-line errors, and that parsing twice starts clean.
#include "shm/base/command_line.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace sluice {
namespace {

enum { kBpf = kFirstLongOnly };
const struct option kLong[] = {{"time", required_argument, nullptr, 't'},
                               {"quiet", no_argument, nullptr, 'q'},
                               {"bpf", no_argument, nullptr, kBpf},
                               {"config", required_argument, nullptr, 'c'},
                               {"compress", no_argument, nullptr, 'z'},
                               {"help", no_argument, nullptr, 'h'},
                               {nullptr, 0, nullptr, 0}};

// Each option or operand as "name=value", "name", or the operand itself.
StatusOr<std::vector<std::string>> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "cmd");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> seen;
  Status s = ParseCommandLine(static_cast<int>(args.size()), argv.data(), "t:qc:zh", kLong,
                              [&](const CommandLineArg& a) -> Status {
                                if (a.id == 'h') return HelpRequested();
                                if (a.id == kOperand) seen.push_back(a.value);
                                else seen.push_back(a.name + (a.value ? "=" + std::string(a.value) : ""));
                                return Status::Ok();
                              });
  if (!s.ok()) return s;
  return seen;
}

using Strings = std::vector<std::string>;

TEST(CommandLineTest, AllFormsOfAValue) {
  for (const Strings& args : {Strings{"-t10s"}, Strings{"-t", "10s"}}) {
    auto r = Parse(args);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r, Strings{"-t=10s"});
  }
  for (const Strings& args : {Strings{"--time=10s"}, Strings{"--time", "10s"}, Strings{"--ti=10s"}}) {
    auto r = Parse(args);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(*r, Strings{"--time=10s"});
  }
  auto cluster = Parse({"-qt", "5s"});
  ASSERT_TRUE(cluster.ok());
  EXPECT_EQ(*cluster, (Strings{"-q", "-t=5s"}));
}

TEST(CommandLineTest, OperandsStayInOrderAndArgvIsNotPermuted) {
  auto r = Parse({"a", "-q", "b", "--bpf", "c", "--", "-t", "d"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, (Strings{"a", "-q", "b", "--bpf", "c", "-t", "d"}));
  auto dash = Parse({"-", "-q"});
  ASSERT_TRUE(dash.ok());
  EXPECT_EQ(*dash, (Strings{"-", "-q"})) << "a lone '-' is an operand";
}

TEST(CommandLineTest, OptionsFirstStopsAtTheCommand) {
  std::vector<std::string> args = {"sluice", "-q", "record", "-t", "5s", "--bogus"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<int> operands;
  int flags = 0;
  Status s = ParseCommandLine(
      static_cast<int>(args.size()), argv.data(), "t:qc:zh", kLong,
      [&](const CommandLineArg& a) {
        if (a.id == kOperand) operands.push_back(a.index);
        else flags++;
        return Status::Ok();
      },
      OperandOrder::kOptionsFirst);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(flags, 1) << "only -q is sluice's; -t and --bogus are record's";
  EXPECT_EQ(operands, (std::vector<int>{2, 3, 4, 5}));
}

TEST(CommandLineTest, OneLineErrorsNameTheOption) {
  const std::pair<Strings, std::string> cases[] = {
      {{"--frobnicate"}, "unknown option '--frobnicate'"},
      {{"--frobnicate=3"}, "unknown option '--frobnicate'"},
      {{"-x"}, "unknown option '-x'"},
      {{"-qx"}, "unknown option '-x'"},
      {{"--time=1s", "-xq"}, "unknown option '-x'"},
      {{"-t"}, "-t needs a value"},
      {{"-q", "-t"}, "-t needs a value"},
      {{"-qt"}, "-t needs a value"},
      {{"--time"}, "--time needs a value"},
      {{"--bpf=1"}, "--bpf takes no value"},
      {{"--quiet=yes"}, "--quiet takes no value"},
      {{"--co", "x"}, "ambiguous option '--co' (--config, --compress)"},
  };
  for (const auto& [args, message] : cases) {
    auto r = Parse(args);
    ASSERT_FALSE(r.ok()) << args[0];
    EXPECT_EQ(r.status().message(), message);
  }
}

TEST(CommandLineTest, HelpStopsTheParse) {
  auto r = Parse({"--help", "--frobnicate"});
  EXPECT_TRUE(IsHelpRequested(r.status())) << r.status().message();
  EXPECT_TRUE(IsHelpRequested(Parse({"-h"}).status()));
  EXPECT_FALSE(IsHelpRequested(Status::Ok()));
}

TEST(CommandLineTest, EachParseStartsClean) {
  // A cluster cut short by an error leaves glibc mid-cluster; the next parse
  // must not resume there.
  EXPECT_FALSE(Parse({"-xq"}).ok());
  auto r = Parse({"-q"});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, Strings{"-q"});
  EXPECT_FALSE(Parse({"-t"}).ok());
  auto again = Parse({"-t", "1s", "x"});
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, (Strings{"-t=1s", "x"}));
}

}  // namespace
}  // namespace sluice
