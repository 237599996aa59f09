// Tests of kconfigs/: every fragment follows the format kconfigs/check.sh and
// docs/KCONFIG.md describe (each option has a one-line need/want reason, so
// `make kconfig-check` can explain what is missing), and check.sh reports
// missing options per feature with the right exit code on synthetic configs.
// Runs from the project root, as `make test` does.
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace sluice {
namespace {

constexpr const char* kDir = "kconfigs";

std::vector<std::string> Fragments() {
  std::vector<std::string> out;
  DIR* d = opendir(kDir);
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".config") == 0) {
      out.push_back(std::string(kDir) + "/" + name);
    }
  }
  closedir(d);
  return out;
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool IsOptionLine(const std::string& line) {
  if (!line.starts_with("CONFIG_")) return false;
  size_t eq = line.find('=');
  if (eq == std::string::npos || eq == 7) return false;
  for (size_t i = 7; i < eq; ++i) {
    char c = line[i];
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return eq + 1 < line.size();
}

struct RunResult {
  int exit_code = -1;
  std::string output;
};

// Runs kconfigs/check.sh with ARGS, stdout and stderr together.
RunResult RunCheck(const std::string& args) {
  RunResult r;
  std::string cmd = "bash kconfigs/check.sh " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class KconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-kconfig-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  // Writes a config with every option of every fragment set as wanted,
  // except those in DROP (dropped ones appear as "# X is not set"), plus EXTRA.
  std::string WriteConfig(const std::set<std::string>& drop, const std::string& extra = "") {
    std::ostringstream out;
    for (const std::string& f : Fragments()) {
      for (const std::string& line : Lines(f)) {
        if (!IsOptionLine(line)) continue;
        std::string name = line.substr(0, line.find('='));
        if (drop.count(name)) {
          out << "# " << name << " is not set\n";
        } else {
          out << line << "\n";
        }
      }
    }
    out << extra;
    std::string path = dir_ + "/config" + std::to_string(++count_);
    std::ofstream(path) << out.str();
    return path;
  }
  std::string dir_;
  int count_ = 0;
};

TEST(KconfigFragmentsTest, TheExpectedFeaturesExist) {
  std::set<std::string> names;
  for (const std::string& f : Fragments()) names.insert(f);
  for (const char* feature : {"base", "ftrace", "events", "bpf", "kprobes", "vm"}) {
    EXPECT_TRUE(names.count(std::string(kDir) + "/" + feature + ".config"))
        << "missing kconfigs/" << feature << ".config (run the tests from the project root)";
  }
}

TEST(KconfigFragmentsTest, EveryOptionHasAOneLineReason) {
  for (const std::string& f : Fragments()) {
    std::vector<std::string> lines = Lines(f);
    ASSERT_FALSE(lines.empty()) << f;
    EXPECT_TRUE(lines[0].starts_with("# about: ")) << f << ": first line must be '# about: ...'";
    std::set<std::string> seen;
    std::string reason;
    int options = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string& line = lines[i];
      std::string where = f + ":" + std::to_string(i + 1);
      if (line.starts_with("# need: ") || line.starts_with("# want: ")) {
        EXPECT_TRUE(reason.empty()) << where << ": two reason lines in a row";
        reason = line.substr(8);
        EXPECT_GE(reason.size(), 10u) << where << ": reason too short to help";
        EXPECT_LE(line.size(), 120u) << where << ": keep the reason to one short line";
        continue;
      }
      if (line.starts_with("# or: ")) {
        EXPECT_FALSE(reason.empty()) << where << ": '# or:' outside an option's reason block";
        // No CONFIG_ prefix: merge_config.sh greps fragments for CONFIG_NAME.
        EXPECT_TRUE(IsOptionLine("CONFIG_" + line.substr(6)) && !line.starts_with("# or: CONFIG_"))
            << where << ": '# or:' needs NAME=value without CONFIG_";
        continue;
      }
      if (line.starts_with("CONFIG_")) {
        EXPECT_TRUE(IsOptionLine(line)) << where << ": not CONFIG_NAME=value";
        EXPECT_FALSE(reason.empty()) << where << ": option without a '# need:'/'# want:' line";
        EXPECT_TRUE(seen.insert(line.substr(0, line.find('='))).second) << where << ": duplicate";
        reason.clear();
        ++options;
        continue;
      }
      // merge_config.sh would read "# CONFIG_X is not set" as an option.
      EXPECT_FALSE(line.starts_with("# CONFIG_")) << where << ": fragments only turn options on";
    }
    EXPECT_TRUE(reason.empty()) << f << ": reason line at the end without an option";
    EXPECT_GT(options, 0) << f;
  }
}

TEST_F(KconfigTest, CompleteConfigPasses) {
  RunResult r = RunCheck(WriteConfig({}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* feature : {"base", "ftrace", "events", "bpf"}) {
    EXPECT_NE(r.output.find(std::string("feature ") + feature + ": ok"), std::string::npos)
        << r.output;
  }
  EXPECT_EQ(r.output.find("MISSING"), std::string::npos) << r.output;
}

TEST_F(KconfigTest, MissingRequiredOptionNamesFeatureOptionAndReason) {
  RunResult r = RunCheck(WriteConfig({"CONFIG_DEBUG_INFO_BTF"}));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bpf: MISSING CONFIG_DEBUG_INFO_BTF=y (is: not set) -- "),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("feature bpf: MISSING 1 required"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("feature ftrace: ok"), std::string::npos) << r.output;
}

TEST_F(KconfigTest, WrongValueIsReported) {
  RunResult r = RunCheck(WriteConfig({"CONFIG_FTRACE_SYSCALLS"}, "CONFIG_FTRACE_SYSCALLS=m\n"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("events: MISSING CONFIG_FTRACE_SYSCALLS=y (is: m)"), std::string::npos)
      << r.output;
}

TEST_F(KconfigTest, AlternativeSatisfiesAnOption) {
  // BPF_EVENTS needs UPROBE_EVENTS or KPROBE_EVENTS; pre-5.18 kernels have
  // DEBUG_INFO instead of a DWARF version choice.
  RunResult r = RunCheck(WriteConfig(
      {"CONFIG_UPROBE_EVENTS", "CONFIG_DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT"},
      "CONFIG_KPROBE_EVENTS=y\nCONFIG_DEBUG_INFO=y\n"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("feature bpf: ok"), std::string::npos) << r.output;
}

TEST_F(KconfigTest, RecommendedAndOptionalDoNotFail) {
  RunResult r = RunCheck(WriteConfig({"CONFIG_BPF_JIT", "CONFIG_DYNAMIC_FTRACE", "CONFIG_ACPI"}));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("bpf: want CONFIG_BPF_JIT=y"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("feature kprobes (optional): MISSING"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("feature vm (optional): ok, 1 recommended not set"), std::string::npos)
      << r.output;
}

TEST_F(KconfigTest, ReadsGzippedConfigAndChosenFragments) {
  std::string path = WriteConfig({"CONFIG_RING_BUFFER"});
  ASSERT_EQ(std::system(("gzip -f '" + path + "'").c_str()), 0);
  RunResult r = RunCheck(path + ".gz kconfigs/ftrace.config");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("ftrace: MISSING CONFIG_RING_BUFFER=y"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("feature bpf"), std::string::npos) << r.output;
}

TEST_F(KconfigTest, UnreadableConfigIsAUsageError) {
  RunResult r = RunCheck(dir_ + "/no-such-config");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("KCONFIG="), std::string::npos) << r.output;
}

TEST_F(KconfigTest, FragmentWithoutReasonIsRejected) {
  std::string frag = dir_ + "/bad.config";
  std::ofstream(frag) << "# about: test\nCONFIG_FTRACE=y\n";
  RunResult r = RunCheck(WriteConfig({}) + " " + frag);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("without a \"# need:\""), std::string::npos) << r.output;
}

}  // namespace
}  // namespace sluice
