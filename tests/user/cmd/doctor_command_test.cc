// Tests of user/cmd/doctor_command.h without a kernel: the kconfig report against
// fake fragments and a fake .config in a temp dir, CapEff parsing and the
// permission verdict, the default-events check and a whole doctor run against
// a fake tracefs tree (BPF probes off), and the report's format and exit code.
#include "user/cmd/doctor_command.h"

#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "tests/user/probes/fake_tracefs.h"
#include "user/cmd/record_config.h"

namespace sluice {
namespace {

using testing::FakeTracefs;

constexpr char kFtraceFragment[] =
    "# about: ftrace core.\n"
    "# need: the Tracers menu.\n"
    "CONFIG_FTRACE=y\n"
    "# need: tracefs.\n"
    "CONFIG_TRACING=y\n"
    "# want: default tracers.\n"
    "# or: FUNCTION_TRACER=y\n"
    "CONFIG_ENABLE_DEFAULT_TRACERS=y\n";
constexpr char kKprobesFragment[] =
    "# about: fentry and kprobes.\n"
    "# optional: the BPF source works without.\n"
    "# need: trampolines.\n"
    "CONFIG_BPF_JIT=y\n";

// Writes the fragments and a .config into `dir`, returns the doctor's kconfig
// checks for them.
std::vector<DoctorCheck> KconfigChecksFor(const FakeTracefs& dir, const std::string& config_text) {
  dir.Write("kconfigs/ftrace.config", kFtraceFragment);
  dir.Write("kconfigs/kprobes.config", kKprobesFragment);
  dir.Write("config", config_text);
  StatusOr<std::vector<KconfigFragment>> fragments = LoadKconfigFragments(dir.Path("kconfigs"));
  EXPECT_TRUE(fragments.ok()) << fragments.status().message();
  StatusOr<std::string> text = ReadMaybeGzipFile(dir.Path("config"));
  EXPECT_TRUE(text.ok());
  return KconfigChecks(fragments.value(), ParseKernelConfig(text.value()), dir.Path("config"));
}

TEST(DoctorKconfigTest, AllSetPasses) {
  FakeTracefs dir;
  std::vector<DoctorCheck> c = KconfigChecksFor(
      dir, "CONFIG_FTRACE=y\nCONFIG_TRACING=y\nCONFIG_FUNCTION_TRACER=y\nCONFIG_BPF_JIT=y\n");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].name, "kconfig ftrace");
  EXPECT_EQ(c[0].state, DoctorState::kPass);
  EXPECT_EQ(c[0].detail, "all 3 options set");
  EXPECT_TRUE(c[0].needed);
  EXPECT_TRUE(c[0].notes.empty());
  EXPECT_EQ(c[1].state, DoctorState::kPass);
  EXPECT_FALSE(c[1].needed);
  EXPECT_TRUE(c[1].optional);
}

TEST(DoctorKconfigTest, MissingRequiredFailsWithFixAndReasons) {
  FakeTracefs dir;
  std::vector<DoctorCheck> c =
      KconfigChecksFor(dir, "CONFIG_FTRACE=y\n# CONFIG_TRACING is not set\n# CONFIG_BPF_JIT is not set\n");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].state, DoctorState::kFail);
  EXPECT_EQ(c[0].detail, "missing CONFIG_TRACING; wanted CONFIG_ENABLE_DEFAULT_TRACERS");
  EXPECT_EQ(c[0].fix,
            "kernel needs CONFIG_TRACING=y CONFIG_ENABLE_DEFAULT_TRACERS=y (kconfigs/ftrace.config)");
  ASSERT_EQ(c[0].notes.size(), 2u);
  EXPECT_EQ(c[0].notes[0], "missing CONFIG_TRACING=y (is: not set) -- tracefs.");
  EXPECT_EQ(c[0].notes[1], "wanted  CONFIG_ENABLE_DEFAULT_TRACERS=y (is: not set) -- default tracers.");
  // A required option of an optional feature is a warning.
  EXPECT_EQ(c[1].state, DoctorState::kWarn);
  EXPECT_EQ(c[1].detail, "missing CONFIG_BPF_JIT (optional feature)");
  EXPECT_EQ(DoctorExitCode(c), 1);
}

TEST(DoctorKconfigTest, OnlyRecommendedMissingWarns) {
  FakeTracefs dir;
  std::vector<DoctorCheck> c = KconfigChecksFor(dir, "CONFIG_FTRACE=y\nCONFIG_TRACING=y\nCONFIG_BPF_JIT=y\n");
  EXPECT_EQ(c[0].state, DoctorState::kWarn);
  EXPECT_EQ(c[0].fix, "kernel wants CONFIG_ENABLE_DEFAULT_TRACERS=y (kconfigs/ftrace.config)");
  EXPECT_EQ(DoctorExitCode(c), 0);
}

TEST(DoctorKconfigTest, NoConfigSkips) {
  std::vector<DoctorCheck> c = KconfigChecks({}, {}, "");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].state, DoctorState::kSkip);
  EXPECT_NE(c[0].detail.find("--kconfig"), std::string::npos);
}

TEST(DoctorPermissionsTest, ParsesCapEff) {
  StatusOr<uint64_t> caps = ParseCapEff("Name:\tx\nCapPrm:\t0000000000000000\nCapEff:\t000001fffeffffff\nSeccomp:\t0\n");
  ASSERT_TRUE(caps.ok());
  EXPECT_EQ(caps.value(), 0x000001fffeffffffull);
  EXPECT_FALSE(ParseCapEff("Name:\tx\n").ok());
  EXPECT_FALSE(ParseCapEff("CapEff:\t00000zz\n").ok());
  EXPECT_FALSE(ParseCapEff("CapEff:\t\n").ok());
  EXPECT_FALSE(ParseCapEff("CapEff:\t00000000000000000001\n").ok());
}

TEST(DoctorPermissionsTest, Verdicts) {
  const uint64_t kAll = 0x000001ffffffffffull;
  const uint64_t kBpfPerfmon = (1ull << 39) | (1ull << 38);
  DoctorCheck root = PermissionsCheck(0, kAll);
  EXPECT_EQ(root.state, DoctorState::kPass);
  EXPECT_NE(root.detail.find("root"), std::string::npos);
  EXPECT_NE(root.detail.find("CAP_SYS_ADMIN CAP_BPF CAP_PERFMON"), std::string::npos);
  EXPECT_EQ(PermissionsCheck(1000, kBpfPerfmon).state, DoctorState::kWarn);  // No tracefs writes.
  EXPECT_EQ(PermissionsCheck(1000, kBpfPerfmon | 2).state, DoctorState::kPass);  // + DAC_OVERRIDE.
  DoctorCheck none = PermissionsCheck(1000, 0);
  EXPECT_EQ(none.state, DoctorState::kFail);
  EXPECT_EQ(none.fix, "run as root or grant CAP_BPF,CAP_PERFMON");
  EXPECT_EQ(PermissionsCheck(0, 0).state, DoctorState::kWarn);  // Root without caps (container).
}

void WriteDefaultEvents(const FakeTracefs& fs) {
  for (const std::string& e : DefaultRecordEvents()) fs.Write("events/" + e + "/format", "name: x\n");
}

TEST(DoctorEventsTest, AllPresentPasses) {
  FakeTracefs fs;
  WriteDefaultEvents(fs);
  DoctorCheck c = DefaultEventsCheck(fs.root());
  EXPECT_EQ(c.state, DoctorState::kPass) << c.detail;
  EXPECT_TRUE(c.needed);
}

TEST(DoctorEventsTest, MissingOptionalEventWarnsMissingCoreEventFails) {
  FakeTracefs fs;
  WriteDefaultEvents(fs);
  std::filesystem::remove_all(fs.Path("events/power/cpu_idle"));
  DoctorCheck c = DefaultEventsCheck(fs.root());
  EXPECT_EQ(c.state, DoctorState::kWarn);
  EXPECT_NE(c.detail.find("missing power/cpu_idle of the"), std::string::npos) << c.detail;
  std::filesystem::remove_all(fs.Path("events/sched/sched_switch"));
  c = DefaultEventsCheck(fs.root());
  EXPECT_EQ(c.state, DoctorState::kFail);
  EXPECT_NE(c.fix.find("CONFIG_EVENT_TRACING"), std::string::npos);
}

TEST(DoctorRunTest, FakeTracefsAndConfig) {
  FakeTracefs fs;
  fs.PopulateRoot();
  WriteDefaultEvents(fs);
  fs.Write("buffer_subbuf_size_kb", "4\n");
  FakeTracefs dir;
  dir.Write("kconfigs/ftrace.config", kFtraceFragment);
  dir.Write("config", "CONFIG_FTRACE=y\nCONFIG_TRACING=y\n");
  DoctorOptions o;
  o.tracefs_root = fs.root();
  o.kconfig_path = dir.Path("config");
  o.kconfigs_dir = dir.Path("kconfigs");
  o.probe_bpf = false;
  o.allow_private_mount = false;
  std::vector<DoctorCheck> checks = RunDoctorChecks(o);
  std::map<std::string, DoctorState> by_name;
  for (const DoctorCheck& c : checks) by_name[c.name] = c.state;
  EXPECT_EQ(by_name["tracefs"], DoctorState::kPass);
  EXPECT_EQ(by_name["trace_clock"], DoctorState::kPass);
  EXPECT_EQ(by_name["buffer_subbuf_size_kb"], DoctorState::kPass);
  EXPECT_EQ(by_name["events"], DoctorState::kPass);
  EXPECT_EQ(by_name["kprobes"], DoctorState::kWarn);  // No kprobe_events in the fake tree.
  EXPECT_EQ(by_name["kconfig ftrace"], DoctorState::kWarn);
  EXPECT_EQ(by_name.count("btf"), 0u);
  EXPECT_EQ(DoctorExitCode(checks), 0);

  // No boot clock, no sub-buffer file: warnings, still ready.
  fs.Write("trace_clock", "[local] global\n");
  std::filesystem::remove(fs.Path("buffer_subbuf_size_kb"));
  fs.Write("kprobe_events", "");
  checks = RunDoctorChecks(o);
  for (const DoctorCheck& c : checks) by_name[c.name] = c.state;
  EXPECT_EQ(by_name["trace_clock"], DoctorState::kWarn);
  EXPECT_EQ(by_name["buffer_subbuf_size_kb"], DoctorState::kWarn);
  EXPECT_EQ(by_name["kprobes"], DoctorState::kPass);
  EXPECT_EQ(DoctorExitCode(checks), 0);

  // Not a tracefs: needed check fails, dependent checks skip.
  o.tracefs_root = dir.Path("kconfigs");
  checks = RunDoctorChecks(o);
  for (const DoctorCheck& c : checks) by_name[c.name] = c.state;
  EXPECT_EQ(by_name["tracefs"], DoctorState::kFail);
  EXPECT_EQ(by_name["events"], DoctorState::kSkip);
  EXPECT_EQ(DoctorExitCode(checks), 1);
}

TEST(DoctorReportTest, OneLinePerCheckThenFeaturesAndVerdict) {
  std::vector<DoctorCheck> checks(4);
  checks[0] = {DoctorState::kPass, "ftrace", "tracefs", "mounted", "", true, false, {}};
  checks[1] = {DoctorState::kFail, "bpf", "btf", "no vmlinux", "kernel needs CONFIG_DEBUG_INFO_BTF=y",
               false, false, {}};
  checks[2] = {DoctorState::kWarn, "kprobes", "fentry", "refused", "policy", false, true, {"note"}};
  checks[3] = {DoctorState::kSkip, "events", "events", "no tracefs", "ignored", true, false, {}};
  const std::string report = FormatDoctorReport(checks);
  EXPECT_EQ(report,
            "PASS  tracefs  mounted\n"
            "FAIL  btf      no vmlinux -- fix: kernel needs CONFIG_DEBUG_INFO_BTF=y\n"
            "WARN  fentry   refused -- fix: policy\n"
            "      note\n"
            "SKIP  events   no tracefs\n"
            "features:\n"
            "  ftrace: ok\n"
            "  bpf: FAIL (btf)\n"
            "  kprobes (optional): not available (fentry)\n"
            "  events: not checked\n"
            "default recording: ready\n");
  EXPECT_EQ(DoctorExitCode(checks), 0);  // btf is not needed by the default recording.
  checks[0].state = DoctorState::kFail;
  EXPECT_EQ(DoctorExitCode(checks), 1);
  EXPECT_NE(FormatDoctorReport(checks).find("default recording: NOT READY (tracefs)"), std::string::npos);
}

}  // namespace
}  // namespace sluice
