// Tests of user/cmd/doctor_kconfig.h: the kconfig fragment parser (and its lint),
// the .config parser, gzip'ed and plain config reading, and the per-feature
// report of unmet options. Runs from the project root (as `make test` does)
// for the test that parses the real kconfigs/.
#include "user/cmd/doctor_kconfig.h"

#include <zlib.h>

#include <string>

#include <gtest/gtest.h>

#include "tests/user/probes/fake_tracefs.h"

namespace sluice {
namespace {

using testing::FakeTracefs;  // A temp dir that cleans up after itself.

constexpr char kFragment[] =
    "# about: the BPF source.\n"
    "# optional: only for the test.\n"
    "# Merge with merge_config.sh.\n"
    "\n"
    "# need: the bpf(2) system call.\n"
    "CONFIG_BPF_SYSCALL=y\n"
    "\n"
    "# need: DWARF for BTF.\n"
    "# or: DEBUG_INFO_DWARF5=y\n"
    "# or: DEBUG_INFO=y\n"
    "CONFIG_DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT=y\n"
    "\n"
    "# want: faster programs.\n"
    "CONFIG_BPF_JIT=y\n";

TEST(KconfigFragmentTest, ParsesOptionsReasonsAndAlternatives) {
  StatusOr<KconfigFragment> f = ParseKconfigFragment("bpf", kFragment);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f.value().feature, "bpf");
  EXPECT_EQ(f.value().about, "the BPF source.");
  EXPECT_TRUE(f.value().optional);
  ASSERT_EQ(f.value().options.size(), 3u);
  const KconfigOption& syscall = f.value().options[0];
  EXPECT_EQ(syscall.name, "CONFIG_BPF_SYSCALL");
  EXPECT_EQ(syscall.value, "y");
  EXPECT_TRUE(syscall.required);
  EXPECT_EQ(syscall.reason, "the bpf(2) system call.");
  EXPECT_EQ(syscall.line, 6);
  const KconfigOption& dwarf = f.value().options[1];
  ASSERT_EQ(dwarf.alternatives.size(), 2u);
  EXPECT_EQ(dwarf.alternatives[0].first, "CONFIG_DEBUG_INFO_DWARF5");
  EXPECT_EQ(dwarf.alternatives[1].first, "CONFIG_DEBUG_INFO");
  EXPECT_EQ(dwarf.alternatives[1].second, "y");
  EXPECT_FALSE(f.value().options[2].required);
  EXPECT_TRUE(f.value().options[2].alternatives.empty());
}

TEST(KconfigFragmentTest, LintsMalformedFragments) {
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"CONFIG_A=y\n", "kconfig fragment x.config:1: option without"},
      {"# need: a\n# need: b\nCONFIG_A=y\n", "x.config:2: reason line without an option"},
      {"# need: a\nCONFIG_A=y\n# want: dangling\n", "reason line without an option after it"},
      {"# need: a\nCONFIG_=y\n", "x.config:2: unexpected option syntax"},
      {"# need: a\nCONFIG_A-B=y\n", "unexpected option syntax"},
      {"# need: a\nCONFIG_A=\n", "unexpected option syntax"},
      {"# need: a\n# or: CONFIG A\nCONFIG_A=y\n", "\"# or:\" wants NAME=value"},
      {"# or: B=y\n", "outside an option's reason block"},
      {"# need: a\n# CONFIG_A is not set\n", "\"is not set\" options are not supported"},
      {"# about: nothing\n", "has no options"},
      {"", "has no options"},
  };
  for (const Case& c : cases) {
    StatusOr<KconfigFragment> f = ParseKconfigFragment("x", c.text);
    ASSERT_FALSE(f.ok()) << c.text;
    EXPECT_NE(f.status().message().find(c.error), std::string::npos)
        << c.text << " -> " << f.status().message();
  }
}

TEST(KconfigFragmentTest, ToleratesCrlfAndTrailingSpace) {
  StatusOr<KconfigFragment> f = ParseKconfigFragment("x", "# need: a \r\nCONFIG_A=y \r\n");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f.value().options[0].value, "y");
  EXPECT_EQ(f.value().options[0].reason, "a");
}

TEST(KernelConfigTest, ParsesValuesAndIgnoresTheRest) {
  KernelConfig c = ParseKernelConfig(
      "#\n# Automatically generated file; DO NOT EDIT.\n"
      "CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=m\nCONFIG_S=\"hello world\"\n"
      "CONFIG_N=64\nnot a line\nCONFIG_=y\n=y\nCONFIG_LAST=y");
  EXPECT_EQ(c.size(), 5u);
  EXPECT_EQ(c["CONFIG_A"], "y");
  EXPECT_EQ(c.count("CONFIG_B"), 0u);
  EXPECT_EQ(c["CONFIG_C"], "m");
  EXPECT_EQ(c["CONFIG_S"], "\"hello world\"");
  EXPECT_EQ(c["CONFIG_N"], "64");
  EXPECT_EQ(c["CONFIG_LAST"], "y");
}

TEST(KconfigReportTest, ReportsMissingAndWantedWithActualValues) {
  StatusOr<KconfigFragment> f = ParseKconfigFragment("bpf", kFragment);
  ASSERT_TRUE(f.ok());
  KconfigFeatureReport all_set = CheckKconfigFragment(
      f.value(), ParseKernelConfig("CONFIG_BPF_SYSCALL=y\nCONFIG_DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT=y\n"
                                   "CONFIG_BPF_JIT=y\n"));
  EXPECT_TRUE(all_set.missing.empty());
  EXPECT_TRUE(all_set.wanted.empty());
  EXPECT_EQ(all_set.option_count, 3u);

  // An alternative satisfies the option; "m" is not "y".
  KconfigFeatureReport r = CheckKconfigFragment(
      f.value(), ParseKernelConfig("CONFIG_BPF_SYSCALL=m\nCONFIG_DEBUG_INFO=y\n# CONFIG_BPF_JIT is not set\n"));
  ASSERT_EQ(r.missing.size(), 1u);
  EXPECT_EQ(r.missing[0].option->name, "CONFIG_BPF_SYSCALL");
  EXPECT_EQ(r.missing[0].actual, "m");
  ASSERT_EQ(r.wanted.size(), 1u);
  EXPECT_EQ(r.wanted[0].option->name, "CONFIG_BPF_JIT");
  EXPECT_EQ(r.wanted[0].actual, "not set");
  EXPECT_TRUE(r.optional);
}

TEST(KconfigFilesTest, ReadsPlainAndGzipConfigs) {
  FakeTracefs dir;
  const std::string text = "CONFIG_A=y\n# CONFIG_B is not set\n";
  dir.Write("config", text);
  gzFile gz = gzopen(dir.Path("config.gz").c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);

  for (const char* name : {"config", "config.gz"}) {
    StatusOr<std::string> read = ReadMaybeGzipFile(dir.Path(name));
    ASSERT_TRUE(read.ok()) << read.status().message();
    EXPECT_EQ(read.value(), text) << name;
  }
  StatusOr<std::string> capped = ReadMaybeGzipFile(dir.Path("config.gz"), 8);
  EXPECT_FALSE(capped.ok());
  StatusOr<std::string> absent = ReadMaybeGzipFile(dir.Path("nope"));
  ASSERT_FALSE(absent.ok());
  EXPECT_NE(absent.status().message().find("cannot open"), std::string::npos);
}

TEST(KconfigFilesTest, LoadsFragmentsInDependencyOrder) {
  FakeTracefs dir;
  for (const char* name : {"zeta", "vm", "bpf", "base", "alpha", "ftrace"}) {
    dir.Write(std::string("k/") + name + ".config", "# need: x\nCONFIG_X=y\n");
  }
  dir.Write("k/README", "not a fragment\n");
  StatusOr<std::vector<KconfigFragment>> f = LoadKconfigFragments(dir.Path("k"));
  ASSERT_TRUE(f.ok()) << f.status().message();
  std::vector<std::string> names;
  for (const KconfigFragment& x : f.value()) names.push_back(x.feature);
  EXPECT_EQ(names, (std::vector<std::string>{"base", "ftrace", "bpf", "vm", "alpha", "zeta"}));
  EXPECT_EQ(FindKconfigsDir(dir.Path("bin/sluice"), dir.Path("none")), "");  // None there.
  dir.Write("kconfigs/base.config", "# need: x\nCONFIG_X=y\n");
  dir.Mkdir("build");
  EXPECT_EQ(FindKconfigsDir(dir.Path("build/sluice")), dir.Path("build/../kconfigs"));

  dir.Write("bad/base.config", "CONFIG_X=y\n");
  StatusOr<std::vector<KconfigFragment>> bad = LoadKconfigFragments(dir.Path("bad"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("base.config:1"), std::string::npos);
  EXPECT_FALSE(LoadKconfigFragments(dir.Path("none")).ok());
}

// An installed tree: the binary in PREFIX/bin finds PREFIX/share/sluice,
// wherever PREFIX is (a DESTDIR staging tree, an unpacked .deb); else the
// build's own prefix; the source checkout's kconfigs/ comes first.
TEST(KconfigFilesTest, FindsTheInstalledFragments) {
  FakeTracefs dir;
  const std::string fragment = "# need: x\nCONFIG_X=y\n";
  dir.Mkdir("stage/usr/bin");  // "bin/.." resolves only if bin exists.
  dir.Write("built-prefix/kconfigs/base.config", fragment);
  EXPECT_EQ(FindKconfigsDir(dir.Path("stage/usr/bin/sluice"), dir.Path("built-prefix/kconfigs")),
            dir.Path("built-prefix/kconfigs"));
  dir.Write("stage/usr/share/sluice/kconfigs/base.config", fragment);
  EXPECT_EQ(FindKconfigsDir(dir.Path("stage/usr/bin/sluice"), dir.Path("built-prefix/kconfigs")),
            dir.Path("stage/usr/bin/../share/sluice/kconfigs"));
  dir.Write("stage/usr/kconfigs/base.config", fragment);
  EXPECT_EQ(FindKconfigsDir(dir.Path("stage/usr/bin/sluice"), dir.Path("built-prefix/kconfigs")),
            dir.Path("stage/usr/bin/../kconfigs"));
  // The default is the build's prefix, and the messages name it.
  EXPECT_EQ(InstalledKconfigsDir().substr(InstalledKconfigsDir().size() - 22),
            "/share/sluice/kconfigs");
  EXPECT_NE(KconfigsDirCandidatesText().find(InstalledKconfigsDir()), std::string::npos);
}

// The fragments shipped in kconfigs/ parse without lint errors.
TEST(KconfigFilesTest, ProjectFragmentsParse) {
  StatusOr<std::vector<KconfigFragment>> f = LoadKconfigFragments("kconfigs");
  ASSERT_TRUE(f.ok()) << f.status().message();
  ASSERT_GE(f.value().size(), 5u);
  EXPECT_EQ(f.value()[0].feature, "base");
  for (const KconfigFragment& x : f.value()) {
    EXPECT_FALSE(x.about.empty()) << x.feature;
    EXPECT_FALSE(x.options.empty()) << x.feature;
  }
}

}  // namespace
}  // namespace sluice
