#include "user/probes/ftrace/ftrace_settings.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "shm/base/file_util.h"
#include "tests/user/probes/fake_tracefs.h"
#include "user/probes/tracefs_state_file.h"

namespace sluice {
namespace {

using ::sluice::testing::FakeTracefs;

const std::vector<std::string> kAvailable = {"sched/sched_switch", "sched/sched_wakeup",
                                             "irq/irq_handler_entry", "foo/sched_wakeup"};

TEST(ResolveFtraceEventsTest, Forms) {
  std::vector<std::string> resolved, unknown;
  ResolveFtraceEvents({"sched/*", "irq_handler_entry", "sched/sched_switch", "nope/none",
                       "bogus", "nogroup/*"},
                      kAvailable, &resolved, &unknown);
  EXPECT_EQ(resolved, (std::vector<std::string>{"sched/sched_switch", "sched/sched_wakeup",
                                                "irq/irq_handler_entry"}));
  EXPECT_EQ(unknown, (std::vector<std::string>{"nope/none", "bogus", "nogroup/*"}));
}

TEST(ResolveFtraceEventsTest, NameAloneMatchesEveryGroup) {
  std::vector<std::string> resolved, unknown;
  ResolveFtraceEvents({"sched_wakeup"}, kAvailable, &resolved, &unknown);
  EXPECT_EQ(resolved, (std::vector<std::string>{"sched/sched_wakeup", "foo/sched_wakeup"}));
  EXPECT_TRUE(unknown.empty());
}

TEST(ResolveFtraceEventsTest, GroupPrefixIsExact) {
  std::vector<std::string> resolved, unknown;
  ResolveFtraceEvents({"sch/*"}, kAvailable, &resolved, &unknown);
  EXPECT_TRUE(resolved.empty());
  EXPECT_EQ(unknown, (std::vector<std::string>{"sch/*"}));
}

TEST(FtraceClockEnumTest, Values) {
  EXPECT_EQ(FtraceClockEnumForTraceClock("boot"), 0u);
  EXPECT_EQ(FtraceClockEnumForTraceClock("global"),
            static_cast<uint32_t>(perfetto::protos::FTRACE_CLOCK_GLOBAL));
  EXPECT_EQ(FtraceClockEnumForTraceClock("local"),
            static_cast<uint32_t>(perfetto::protos::FTRACE_CLOCK_LOCAL));
  EXPECT_EQ(FtraceClockEnumForTraceClock("x86-tsc"),
            static_cast<uint32_t>(perfetto::protos::FTRACE_CLOCK_UNKNOWN));
}

class FtraceSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_.PopulateRoot();
    fs_ = fake_.Open();
    ASSERT_NE(fs_, nullptr);
  }
  FtraceSettingsOptions Options(bool android) {
    FtraceSettingsOptions o;
    o.is_android = android;
    o.print_warnings = false;
    o.run_command = [this](const std::vector<std::string>& argv, std::string* output) {
      commands_.push_back(argv);
      *output = command_output_;
      return command_status_;
    };
    return o;
  }

  FakeTracefs fake_;
  std::unique_ptr<Tracefs> fs_;
  std::vector<std::vector<std::string>> commands_;
  std::string command_output_;
  int command_status_ = 0;
};

TEST_F(FtraceSettingsTest, StartAppliesAndRestoreUndoesOnlyOurChanges) {
  FtraceSettingsConfig config;
  config.events = {"sched/*", "print", "nope/none"};
  config.buffer_size_kb = 4096;
  FtraceSettings c(fs_.get(), config, Options(false));
  ASSERT_TRUE(c.Start().ok());

  EXPECT_EQ(c.active_events(), (std::vector<std::string>{"sched/sched_switch", "sched/sched_wakeup",
                                                         "sched/sched_waking", "ftrace/print"}));
  // sched_wakeup was enabled by someone else: not ours.
  EXPECT_EQ(c.enabled_by_us(), (std::vector<std::string>{"sched/sched_switch", "sched/sched_waking"}));
  EXPECT_EQ(c.unknown_events(), (std::vector<std::string>{"nope/none"}));
  EXPECT_TRUE(c.failed_events().empty());
  EXPECT_EQ(c.trace_clock(), "boot");
  EXPECT_EQ(c.ftrace_clock_enum(), 0u);

  EXPECT_EQ(fake_.Read("tracing_on"), "1");
  EXPECT_EQ(fake_.Read("trace_clock"), "boot");
  EXPECT_EQ(fake_.Read("buffer_size_kb"), "4096");
  EXPECT_EQ(fake_.Read("events/sched/sched_switch/enable"), "1");
  EXPECT_EQ(fake_.Read("events/sched/sched_waking/enable"), "1");
  EXPECT_EQ(fake_.Read("events/irq/irq_handler_entry/enable"), "0\n");  // Untouched.

  c.DisableEvents();
  EXPECT_EQ(fake_.Read("events/sched/sched_switch/enable"), "0");
  EXPECT_EQ(fake_.Read("tracing_on"), "1");  // Still on for the final drain.
  c.Restore();
  EXPECT_TRUE(c.restore_errors().empty());
  EXPECT_EQ(fake_.Read("tracing_on"), "0");
  EXPECT_EQ(fake_.Read("trace_clock"), "local");
  // The unexpanded "7 (expanded: 1408)" comes back as its expanded size:
  // the kernel's expansion is one-way.
  EXPECT_EQ(fake_.Read("buffer_size_kb"), "1408");
  EXPECT_EQ(fake_.Read("events/sched/sched_switch/enable"), "0");
  EXPECT_EQ(fake_.Read("events/sched/sched_waking/enable"), "0");
  EXPECT_EQ(fake_.Read("events/sched/sched_wakeup/enable"), "1\n");  // Someone else's stays.
}

// kprobes: each one the config asks for and the kernel does not have is
// appended to kprobe_events (entry "p:", return "r:"), its events enabled,
// and removed ("-:") at the end; one that exists already (another session's)
// is used and left; a name that is no function name is refused.
TEST_F(FtraceSettingsTest, KprobesAreDefinedEnabledAndRemovedOnlyIfOurs) {
  fake_.Write("kprobe_events", "");
  // Another session's kretprobe on vfs_read exists already.
  fake_.Write("events/sluice_kretprobes/vfs_read/enable", "0\n");
  fake_.Write("events/sluice_kretprobes/vfs_read/format", "name: vfs_read\nID: 2000\n");
  fake_.Write("available_events", fake_.Read("available_events") + "sluice_kretprobes:vfs_read\n");
  FtraceSettingsConfig config;
  config.events = {"sched/sched_switch"};
  config.kprobes = {{"do_sys_openat2", true, true}, {"vfs_read", false, true}, {"bad name;", true, false}};
  FtraceSettings c(fs_.get(), config, Options(false));
  ASSERT_TRUE(c.Start().ok());
  EXPECT_EQ(fake_.Read("kprobe_events"),
            "p:sluice_kprobes/do_sys_openat2 do_sys_openat2\nr:sluice_kretprobes/do_sys_openat2 do_sys_openat2\n");
  EXPECT_EQ(c.failed_kprobes(), std::vector<std::string>{"bad name;"});
  // The fake kernel makes no event of a definition: only the existing one resolves.
  EXPECT_EQ(c.enabled_by_us(), (std::vector<std::string>{"sched/sched_switch", "sluice_kretprobes/vfs_read"}));
  EXPECT_EQ(fake_.Read("events/sluice_kretprobes/vfs_read/enable"), "1");
  c.Restore();
  EXPECT_TRUE(c.restore_errors().empty());
  EXPECT_EQ(fake_.Read("events/sluice_kretprobes/vfs_read/enable"), "0");
  EXPECT_EQ(fake_.Read("kprobe_events"),
            "p:sluice_kprobes/do_sys_openat2 do_sys_openat2\nr:sluice_kretprobes/do_sys_openat2 do_sys_openat2\n"
            "-:sluice_kprobes/do_sys_openat2\n-:sluice_kretprobes/do_sys_openat2\n");
}

TEST_F(FtraceSettingsTest, NothingWrittenWhenAlreadyAsWanted) {
  fake_.Write("tracing_on", "1\n");
  fake_.Write("trace_clock", "local global [boot]\n");
  fake_.Write("buffer_size_kb", "2048\n");
  FtraceSettingsConfig config;
  config.events = {"sched/sched_wakeup"};
  config.buffer_size_kb = 2048;
  {
    FtraceSettings c(fs_.get(), config, Options(false));
    ASSERT_TRUE(c.Start().ok());
    EXPECT_TRUE(c.enabled_by_us().empty());
  }  // Destructor restores.
  EXPECT_EQ(fake_.Read("tracing_on"), "1\n");
  EXPECT_EQ(fake_.Read("trace_clock"), "local global [boot]\n");
  EXPECT_EQ(fake_.Read("buffer_size_kb"), "2048\n");
  EXPECT_EQ(fake_.Read("events/sched/sched_wakeup/enable"), "1\n");
}

TEST_F(FtraceSettingsTest, BufferPercentIsSetAndPutBack) {
  FtraceSettingsConfig config;
  config.events = {"sched/sched_switch"};
  config.buffer_percent = 25;
  {
    FtraceSettings c(fs_.get(), config, Options(false));
    ASSERT_TRUE(c.Start().ok());
    EXPECT_EQ(fake_.Read("buffer_percent"), "25");
  }  // Destructor restores.
  EXPECT_EQ(fake_.Read("buffer_percent"), "50");

  // Already the value wanted: not written, so not put back either.
  fake_.Write("buffer_percent", "25\n");
  fake_.Write("trace_clock", "[local] boot\n");  // The fake's restore wrote "local", no brackets.
  {
    FtraceSettings c(fs_.get(), config, Options(false));
    ASSERT_TRUE(c.Start().ok());
    EXPECT_FALSE(c.changes().buffer_percent_found.has_value());
  }
  EXPECT_EQ(fake_.Read("buffer_percent"), "25\n");
}

// The data source lowers the watermark while the trace runs: the value found
// before the first change is the one put back.
TEST_F(FtraceSettingsTest, BufferPercentSetWhileTracingIsPutBackToTheOneFound) {
  FtraceSettingsConfig config;
  config.events = {"sched/sched_switch"};
  config.buffer_percent = 40;
  FtraceSettings c(fs_.get(), config, Options(false));
  ASSERT_TRUE(c.Start().ok());
  ASSERT_TRUE(c.SetBufferPercent(25).ok());
  EXPECT_EQ(fake_.Read("buffer_percent"), "25");
  EXPECT_EQ(c.changes().buffer_percent_found, 50u);
  EXPECT_EQ(c.changes().buffer_percent_set, 25u);
  c.Restore();
  EXPECT_EQ(fake_.Read("buffer_percent"), "50");
  EXPECT_TRUE(c.SetBufferPercent(10).ok());  // After Restore(): nothing.
  EXPECT_EQ(fake_.Read("buffer_percent"), "50");
}

TEST_F(FtraceSettingsTest, NoBufferPercentFileIsAWarningNotAnError) {
  ASSERT_EQ(unlink(fake_.Path("buffer_percent").c_str()), 0);
  FtraceSettingsConfig config;
  config.events = {"sched/sched_switch"};
  config.buffer_percent = 25;
  FtraceSettings c(fs_.get(), config, Options(false));
  EXPECT_TRUE(c.Start().ok());
  EXPECT_FALSE(c.changes().buffer_percent_found.has_value());
}

TEST_F(FtraceSettingsTest, PerCpuBufferSizesRestored) {
  fake_.Write("buffer_size_kb", "X\n");
  fake_.Write("per_cpu/cpu0/buffer_size_kb", "100\n");
  fake_.Write("per_cpu/cpu1/buffer_size_kb", "200\n");
  FtraceSettingsConfig config;
  config.buffer_size_kb = 512;
  FtraceSettings c(fs_.get(), config, Options(false));
  ASSERT_TRUE(c.Start().ok());
  EXPECT_EQ(fake_.Read("buffer_size_kb"), "512");
  c.Restore();
  EXPECT_EQ(fake_.Read("per_cpu/cpu0/buffer_size_kb"), "100");
  EXPECT_EQ(fake_.Read("per_cpu/cpu1/buffer_size_kb"), "200");
}

TEST_F(FtraceSettingsTest, FailedEnableIsReportedAndSkipped) {
  // An "enable" that cannot be written (a directory: EISDIR, even for root).
  std::filesystem::remove(fake_.Path("events/irq/irq_handler_entry/enable"));
  fake_.Mkdir("events/irq/irq_handler_entry/enable");
  FtraceSettingsConfig config;
  config.events = {"irq/irq_handler_entry", "sched/sched_switch"};
  FtraceSettings c(fs_.get(), config, Options(false));
  ASSERT_TRUE(c.Start().ok());
  EXPECT_EQ(c.failed_events(), (std::vector<std::string>{"irq/irq_handler_entry"}));
  EXPECT_EQ(c.active_events(), (std::vector<std::string>{"sched/sched_switch"}));
}

// FtraceConfig.throttle_rss_stat and disable_generic_events, as upstream's
// recorder applies them: Android's throttled rss_stat where the kernel has
// it; no event that would be written as a GenericFtraceEvent.
TEST_F(FtraceSettingsTest, ThrottledRssStatAndNoGenericEvents) {
  fake_.Write("available_events", fake_.Read("available_events") +
                                      "kmem:rss_stat\nsynthetic:rss_stat_throttled\ncgroup:cgroup_mkdir\n");
  for (const char* e : {"kmem/rss_stat", "synthetic/rss_stat_throttled", "cgroup/cgroup_mkdir"})
    fake_.Write(std::string("events/") + e + "/enable", "0\n");
  FtraceSettingsConfig config;
  config.events = {"sched/sched_switch", "kmem/rss_stat", "cgroup/cgroup_mkdir"};
  {
    FtraceSettings c(fs_.get(), config, Options(false));
    { Status st = c.Start(); ASSERT_TRUE(st.ok()) << st.message(); }
    EXPECT_EQ(c.active_events(),
              (std::vector<std::string>{"sched/sched_switch", "kmem/rss_stat", "cgroup/cgroup_mkdir"}));
    c.Restore();
  }
  // The fake tree is files, not the kernel: its clock file as the kernel shows it.
  fake_.Write("trace_clock", "[local] global boot\n");
  for (const char* e : {"kmem/rss_stat", "cgroup/cgroup_mkdir"}) fake_.Write(std::string("events/") + e + "/enable", "0\n");
  config.throttle_rss_stat = true;
  config.disable_generic_events = true;
  FtraceSettings c(fs_.get(), config, Options(false));
  { Status st = c.Start(); ASSERT_TRUE(st.ok()) << st.message(); }
  EXPECT_EQ(c.active_events(), (std::vector<std::string>{"sched/sched_switch", "synthetic/rss_stat_throttled"}));
  EXPECT_EQ(fake_.Read("events/kmem/rss_stat/enable"), "0\n");
  EXPECT_EQ(fake_.Read("events/cgroup/cgroup_mkdir/enable"), "0\n");
  EXPECT_EQ(c.generic_events_left_off(), std::vector<std::string>{"cgroup/cgroup_mkdir"});
  c.Restore();
  EXPECT_EQ(fake_.Read("events/synthetic/rss_stat_throttled/enable"), "0");
}

TEST_F(FtraceSettingsTest, NoBootClockKeepsCurrent) {
  fake_.Write("trace_clock", "[local] global\n");
  FtraceSettings c(fs_.get(), {}, Options(false));
  ASSERT_TRUE(c.Start().ok());
  EXPECT_EQ(c.trace_clock(), "local");
  EXPECT_EQ(fake_.Read("trace_clock"), "[local] global\n");
}

TEST_F(FtraceSettingsTest, CategoriesOffAndroidEnableTheirKernelEvents) {
  FtraceSettingsConfig config;
  config.atrace_categories = {"am", "sched", "binder_driver"};
  config.atrace_apps = {"com.example"};
  FtraceSettings c(fs_.get(), config, Options(false));
  ASSERT_TRUE(c.Start().ok());
  EXPECT_TRUE(commands_.empty());  // No atrace to run.
  EXPECT_TRUE(c.atrace_errors().empty());
  // "sched" brings the events of it this kernel has; "am" (user space) and
  // binder (not in this kernel) bring none; all bring ftrace/print.
  EXPECT_NE(std::find(c.active_events().begin(), c.active_events().end(), "sched/sched_switch"),
            c.active_events().end());
  EXPECT_NE(std::find(c.active_events().begin(), c.active_events().end(), "ftrace/print"),
            c.active_events().end());
  EXPECT_EQ(std::find(c.active_events().begin(), c.active_events().end(), "sched/sched_wakeup"),
            c.active_events().end());  // Not in Perfetto's sched category.
  EXPECT_TRUE(c.unknown_events().empty());
}

TEST_F(FtraceSettingsTest, UnknownCategoryOffAndroidIsAnUnknownEvent) {
  FtraceSettingsConfig config;
  config.atrace_categories = {"shed"};
  FtraceSettings c(fs_.get(), config, Options(false));
  ASSERT_TRUE(c.Start().ok());
  EXPECT_EQ(c.unknown_events(), (std::vector<std::string>{"atrace category shed"}));
}

TEST_F(FtraceSettingsTest, AtraceOnAndroidRunsAtrace) {
  FtraceSettingsConfig config;
  config.atrace_categories = {"gfx", "sched"};
  config.atrace_apps = {"com.a", "com.b"};
  FtraceSettings c(fs_.get(), config, Options(true));
  ASSERT_TRUE(c.Start().ok());
  ASSERT_EQ(commands_.size(), 1u);
  EXPECT_EQ(commands_[0], (std::vector<std::string>{"/system/bin/atrace", "--async_start",
                                                    "--only_userspace", "-a", "com.a,com.b",
                                                    "gfx", "sched"}));
  EXPECT_TRUE(c.atrace_errors().empty());
  // "sched" brings its kernel events; the fake kernel has two of them.
  EXPECT_NE(std::find(c.active_events().begin(), c.active_events().end(), "sched/sched_switch"),
            c.active_events().end());
  c.Restore();
  ASSERT_EQ(commands_.size(), 2u);
  EXPECT_EQ(commands_[1][1], "--async_stop");
}

TEST_F(FtraceSettingsTest, AtraceFailureIsReported) {
  command_status_ = 1;
  command_output_ = "error: unknown category foo\n";
  FtraceSettingsConfig config;
  config.atrace_categories = {"foo"};
  FtraceSettings c(fs_.get(), config, Options(true));
  ASSERT_TRUE(c.Start().ok());
  EXPECT_NE(c.atrace_errors().find("unknown category foo"), std::string::npos);
  c.Restore();
  EXPECT_EQ(commands_.size(), 1u);  // Never started: no --async_stop.
}

TEST_F(FtraceSettingsTest, StartErrorRestoresWhatWasChanged) {
  // Buffer size and clock get changed, then available_events is missing.
  std::filesystem::remove(fake_.Path("available_events"));
  FtraceSettingsConfig config;
  config.buffer_size_kb = 4096;
  FtraceSettings c(fs_.get(), config, Options(false));
  EXPECT_FALSE(c.Start().ok());
  EXPECT_EQ(fake_.Read("tracing_on"), "0\n");
  EXPECT_EQ(fake_.Read("trace_clock"),
            "[local] global counter uptime perf mono mono_raw boot x86-tsc\n");
}

// With a state file, what Start() changed is on disk until Restore() has put
// it back, so that another process can undo it if this one is killed.
TEST_F(FtraceSettingsTest, StateFileListsTheChangesUntilRestored) {
  const std::string dir = fake_.Path("state");
  auto file = TracefsStateFile::Create(dir);
  ASSERT_TRUE(file.ok()) << file.status().message();
  FtraceSettingsConfig config;
  config.events = {"sched/*"};
  config.buffer_size_kb = 4096;
  config.buffer_percent = 25;
  FtraceSettingsOptions options = Options(false);
  options.state_file = file->get();
  FtraceSettings c(fs_.get(), config, options);
  EXPECT_FALSE(PathExists((*file)->path())) << "nothing changed yet";
  ASSERT_TRUE(c.Start().ok());
  EXPECT_TRUE(c.state_file_error().empty()) << c.state_file_error();

  auto saved = ReadTracefsStateFile((*file)->path());
  ASSERT_TRUE(saved.ok()) << saved.status().message();
  TracefsChanges expected;
  expected.tracefs_root = fake_.root();
  expected.tracing_on_found = false;
  expected.trace_clock_found = "local";
  expected.trace_clock_set = "boot";
  expected.buffer_size_kb_found = 1408;
  expected.buffer_size_kb_set = 4096;
  expected.buffer_percent_found = 50;
  expected.buffer_percent_set = 25;
  expected.enabled_events = {"sched/sched_switch", "sched/sched_waking"};
  EXPECT_EQ(saved->changes, expected);
  EXPECT_EQ(saved->changes, c.changes());

  c.DisableEvents();
  saved = ReadTracefsStateFile((*file)->path());
  ASSERT_TRUE(saved.ok()) << saved.status().message();
  EXPECT_TRUE(saved->changes.enabled_events.empty()) << "events off: no longer listed";
  EXPECT_TRUE(saved->changes.tracing_on_found.has_value());

  c.Restore();
  // "?": the fake shows the clock as written, without the kernel's brackets.
  EXPECT_EQ(c.restore_report().Summary(),
            "disabled 2 events, tracing_on 1 -> 0, trace_clock ? -> local, "
            "buffer_size_kb 4096 -> 1408, buffer_percent 25 -> 50");
  EXPECT_EQ(fake_.Read("buffer_percent"), "50");
  EXPECT_FALSE(PathExists((*file)->path())) << "all put back: no file";
}

TEST_F(FtraceSettingsTest, StateFileThatCannotBeWrittenIsOneWarning) {
  fake_.Write("state", "a file where the directory should be");
  auto file = TracefsStateFile::Create(fake_.Path("state"));
  ASSERT_TRUE(file.ok());
  FtraceSettingsConfig config;
  config.events = {"sched/sched_switch"};
  FtraceSettingsOptions options = Options(false);
  options.state_file = file->get();
  FtraceSettings c(fs_.get(), config, options);
  ASSERT_TRUE(c.Start().ok()) << "the trace goes on";
  EXPECT_NE(c.state_file_error().find("if this process is killed, tracefs stays as it changed it"),
            std::string::npos)
      << c.state_file_error();
  EXPECT_EQ(fake_.Read("events/sched/sched_switch/enable"), "1");
}

}  // namespace
}  // namespace sluice
