#include "user/probes/tracefs.h"

#include <gtest/gtest.h>

#include "tests/user/probes/fake_tracefs.h"

namespace sluice {
namespace {

using ::sluice::testing::FakeTracefs;

TEST(TracefsParseTest, TraceClock) {
  const char* text = "local global counter uptime perf mono mono_raw [boot] tai x86-tsc\n";
  EXPECT_EQ(ParseSelectedTraceClock(text), "boot");
  EXPECT_EQ(ParseSelectedTraceClock("[local] global\n"), "local");
  EXPECT_EQ(ParseSelectedTraceClock("local global"), "");
  auto clocks = ParseTraceClocks("[local] global boot\n");
  EXPECT_EQ(clocks, (std::vector<std::string>{"local", "global", "boot"}));
}

TEST(TracefsParseTest, BufferSize) {
  auto plain = ParseBufferSize("1408\n");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->kb, 1408u);
  EXPECT_TRUE(plain->expanded);
  EXPECT_FALSE(plain->per_cpu_differs);

  auto unexpanded = ParseBufferSize("7 (expanded: 1408)\n");
  ASSERT_TRUE(unexpanded.ok());
  EXPECT_EQ(unexpanded->kb, 1408u);
  EXPECT_FALSE(unexpanded->expanded);
  EXPECT_EQ(unexpanded->text, "7 (expanded: 1408)");
  EXPECT_EQ(unexpanded->unexpanded_kb, 7u);

  auto differs = ParseBufferSize("X\n");
  ASSERT_TRUE(differs.ok());
  EXPECT_TRUE(differs->per_cpu_differs);

  EXPECT_FALSE(ParseBufferSize("").ok());
  EXPECT_FALSE(ParseBufferSize("7 (expanded: )").ok());
  EXPECT_FALSE(ParseBufferSize("lots").ok());
}

// The kernel-wide expansion flag before 6.6: an instance resize sets it, and a
// never-used root keeps its boot size (FtraceSettings expands it then).
TEST(TracefsParseTest, StayedAtBootSize) {
  const TracefsBufferSize before = *ParseBufferSize("7 (expanded: 1408)");
  EXPECT_TRUE(StayedAtBootSize(before, *ParseBufferSize("7")));
  EXPECT_FALSE(StayedAtBootSize(before, *ParseBufferSize("7 (expanded: 1408)")));  // 6.6+: untouched.
  EXPECT_FALSE(StayedAtBootSize(before, *ParseBufferSize("1408")));  // Expanded by someone.
  EXPECT_FALSE(StayedAtBootSize(before, *ParseBufferSize("X")));
  EXPECT_FALSE(StayedAtBootSize(*ParseBufferSize("7"), *ParseBufferSize("7")));  // Set to 7 on purpose.
}

TEST(TracefsParseTest, AvailableEvents) {
  auto events = ParseAvailableEvents("sched:sched_switch\nirq:irq_handler_entry\n\nbad\n:x\n");
  EXPECT_EQ(events, (std::vector<std::string>{"sched/sched_switch", "irq/irq_handler_entry"}));
}

TEST(TracefsTest, OpenRootOverrideAndAccessors) {
  FakeTracefs fake;
  fake.PopulateRoot();
  TracefsOptions options;
  options.root = fake.root();
  options.cpu_online_path = fake.Path("cpu_online");
  auto fs = Tracefs::Open(options);
  ASSERT_TRUE(fs.ok()) << fs.status().message();
  const Tracefs& t = **fs;
  EXPECT_TRUE(t.is_root_instance());
  EXPECT_EQ(t.dir(), fake.root());
  EXPECT_EQ(*t.ReadTracingOn(), false);
  EXPECT_EQ(*t.ReadTraceClock(), "local");
  EXPECT_EQ(t.ReadBufferSize()->kb, 1408u);
  EXPECT_EQ(*t.ReadEventEnabled("sched", "sched_wakeup"), true);
  EXPECT_EQ(*t.ReadEventEnabled("sched", "sched_switch"), false);
  EXPECT_EQ(*t.ReadOnlineCpus(), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(t.ListPerCpuDirs(), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(t.ReadAvailableEvents()->size(), 4u);
  // No buffer_subbuf_size_kb: one system page.
  EXPECT_EQ(*t.ReadSubBufferSize(), static_cast<uint32_t>(sysconf(_SC_PAGESIZE)));
  fake.Write("buffer_subbuf_size_kb", "8\n");
  EXPECT_EQ(*t.ReadSubBufferSize(), 8192u);

  // Writes replace the contents of a plain file.
  ASSERT_TRUE(t.WriteTracingOn(true).ok());
  EXPECT_EQ(fake.Read("tracing_on"), "1");
  ASSERT_TRUE(t.WriteBufferSizeKb(4096).ok());
  EXPECT_EQ(fake.Read("buffer_size_kb"), "4096");
  EXPECT_EQ(t.PerCpuPath(1, "stats"), fake.root() + "/per_cpu/cpu1/stats");
}

TEST(TracefsTest, OnlineCpusThroughAKeptFd) {
  FakeTracefs fake;
  fake.PopulateRoot();
  std::unique_ptr<Tracefs> fs = fake.Open();
  ASSERT_NE(fs, nullptr);
  ScopedFd fd;
  EXPECT_EQ(*fs->ReadOnlineCpus(&fd), (std::vector<uint32_t>{0, 1}));
  ASSERT_TRUE(fd.valid());
  const int first_fd = fd.get();
  fake.Write("cpu_online", "0-2,5\n");  // In place, as the kernel's file changes.
  EXPECT_EQ(*fs->ReadOnlineCpus(&fd), (std::vector<uint32_t>{0, 1, 2, 5}));
  EXPECT_EQ(fd.get(), first_fd);  // The same open file, read again from its start.
  fake.Write("cpu_online", "zero\n");
  auto bad = fs->ReadOnlineCpus(&fd);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(fake.Path("cpu_online")), std::string::npos);

  // The real file, where there is one: sysfs renders it anew at each read.
  TracefsOptions options;
  options.root = fake.root();
  options.cpu_online_path = "/sys/devices/system/cpu/online";
  if (access(options.cpu_online_path.c_str(), R_OK) == 0) {
    auto real = Tracefs::Open(options);
    ASSERT_TRUE(real.ok());
    ScopedFd real_fd;
    auto once = (*real)->ReadOnlineCpus(&real_fd);
    auto twice = (*real)->ReadOnlineCpus(&real_fd);
    ASSERT_TRUE(once.ok() && twice.ok());
    EXPECT_EQ(*once, *(*real)->ReadOnlineCpus());
    EXPECT_EQ(*twice, *once);
  }

  options.cpu_online_path = fake.Path("no_such_file");
  auto missing = Tracefs::Open(options);
  ASSERT_TRUE(missing.ok());
  ScopedFd missing_fd;
  EXPECT_FALSE((*missing)->ReadOnlineCpus(&missing_fd).ok());
  EXPECT_FALSE(missing_fd.valid());
}

TEST(TracefsTest, MissingTracefsNamesTheFix) {
  FakeTracefs fake;  // Empty: no tracing_on.
  TracefsOptions options;
  options.root = fake.root();
  auto fs = Tracefs::Open(options);
  ASSERT_FALSE(fs.ok());
  EXPECT_NE(fs.status().message().find("no tracefs at"), std::string::npos);
  EXPECT_EQ(fs.status().message().find('\n'), std::string::npos);
}

TEST(TracefsTest, InstanceCreatedAndRemoved) {
  FakeTracefs fake;
  fake.PopulateRoot();
  TracefsOptions options;
  options.root = fake.root();
  options.instance_name = "sluice_unit";
  // A fake "mkdir" makes an empty directory, which the writability check
  // rejects; the instance made for it must be removed again.
  auto fs = Tracefs::Open(options);
  ASSERT_FALSE(fs.ok());
  EXPECT_NE(fs.status().message().find("not writable"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(fake.Path("instances/sluice_unit")));

  // An existing instance is used and not removed.
  fake.PopulateInstance("instances/sluice_unit/");
  auto fs2 = Tracefs::Open(options);
  ASSERT_TRUE(fs2.ok()) << fs2.status().message();
  EXPECT_FALSE((*fs2)->created_instance());
  EXPECT_EQ((*fs2)->dir(), fake.Path("instances/sluice_unit"));
  EXPECT_EQ((*fs2)->RootPath("available_events"), fake.Path("available_events"));
  ASSERT_TRUE((*fs2)->RemoveCreatedInstance().ok());
  EXPECT_TRUE(std::filesystem::exists(fake.Path("instances/sluice_unit")));

  options.create_instance = false;
  options.instance_name = "absent";
  EXPECT_FALSE(Tracefs::Open(options).ok());
  options.instance_name = "../escape";
  EXPECT_FALSE(Tracefs::Open(options).ok());
}

}  // namespace
}  // namespace sluice
