#include "user/probes/tracefs_state_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "shm/base/file_util.h"

namespace sluice {
namespace {

TracefsState FullState() {
  TracefsState s;
  s.owner = {4242, 813255, "ac1e8864-873f-494b-bdb6-dc42f52752db"};
  s.owner_name = "sluice-probes";
  s.created_boot_ns = 81325500000;
  TracefsChanges& c = s.changes;
  c.tracefs_root = "/sys/kernel/tracing";
  c.instance_name = "sluice";
  c.created_instance = true;
  c.tracing_on_found = false;
  c.trace_clock_found = "local";
  c.trace_clock_set = "boot";
  c.buffer_size_kb_found = 1408;
  c.buffer_size_kb_set = 2051;
  c.enabled_events = {"sched/sched_switch", "sched/sched_waking", "power/cpu_idle"};
  c.atrace_path = "/system/bin/atrace";
  return s;
}

TEST(TracefsStateFileTest, RoundTrip) {
  TracefsState s = FullState();
  const std::string text = EncodeTracefsState(s);
  EXPECT_EQ(text,
            "sluice-tracefs-state 1\n"
            "owner_pid 4242\n"
            "owner_start_time 813255\n"
            "owner_boot_id ac1e8864-873f-494b-bdb6-dc42f52752db\n"
            "owner_name sluice-probes\n"
            "created_boot_ns 81325500000\n"
            "tracefs_root /sys/kernel/tracing\n"
            "instance sluice\n"
            "created_instance 1\n"
            "tracing_on_found 0\n"
            "trace_clock_found local\n"
            "trace_clock_set boot\n"
            "buffer_size_kb_found 1408\n"
            "buffer_size_kb_set 2051\n"
            "enabled_event sched/sched_switch\n"
            "enabled_event sched/sched_waking\n"
            "enabled_event power/cpu_idle\n"
            "atrace_path /system/bin/atrace\n"
            "end\n");
  auto parsed = ParseTracefsState(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(*parsed, s);

  // Per-CPU sizes, the root instance, buffer_percent, nothing else.
  TracefsState per_cpu = FullState();
  per_cpu.changes = {};
  per_cpu.changes.tracefs_root = "/sys/kernel/debug/tracing";
  per_cpu.changes.per_cpu_buffer_size_kb_found = {{0, 100}, {1, 200}};
  per_cpu.changes.buffer_percent_found = 50;
  per_cpu.changes.buffer_percent_set = 25;
  per_cpu.changes.created_kprobes = {"sluice_kprobes/do_sys_openat2", "sluice_kretprobes/do_sys_openat2"};
  auto parsed2 = ParseTracefsState(EncodeTracefsState(per_cpu));
  ASSERT_TRUE(parsed2.ok()) << parsed2.status().message();
  EXPECT_EQ(*parsed2, per_cpu);
}

// Every damage is refused with the line and the reason: a file that does
// not parse is never acted on.
TEST(TracefsStateFileTest, DamagedFilesAreRefusedWithTheReason) {
  const std::string good = EncodeTracefsState(FullState());
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  const struct {
    std::string text;
    std::string error;
  } cases[] = {
      {"", "empty file"},
      {"hello\n", "line 1: not a sluice tracefs state file (no 'sluice-tracefs-state' line first)"},
      {replace("state 1\n", "state 2\n"),
       "line 1: format version ' 2' is not 1 (written by another sluice version?)"},
      {good.substr(0, good.size() - 4), "no 'end' line: the file is cut short"},
      {good.substr(0, good.find("tracing_on_found")), "no 'end' line: the file is cut short"},
      {good.substr(0, good.find("tracing_on_found") + 5), "line 10: not a 'key value' line: 'traci'"},
      {good + "owner_pid 1\n", "line 20: text after 'end'"},
      {replace("owner_pid 4242", "owner_pid -1"), "line 2: bad pid '-1'"},
      {replace("owner_pid 4242", "owner_pid 0"), "line 2: bad pid '0'"},
      {replace("created_instance 1", "created_instance 1\ncreated_instance 1"),
       "line 10: 'created_instance' appears twice"},
      {replace("atrace_path", "created_kprobe perfetto_kprobes/vfs_read\natrace_path"),
       "line 18: bad kprobe name 'perfetto_kprobes/vfs_read'"},
      {replace("tracing_on_found 0", "colour blue"),
       "line 10: unknown key 'colour' (written by another sluice version?)"},
      {replace("tracefs_root /sys/kernel/tracing", "tracefs_root sys/kernel/tracing"),
       "line 7: bad tracefs root 'sys/kernel/tracing'"},
      {replace("tracefs_root /sys/kernel/tracing", "tracefs_root /sys/kernel/tracing/../../etc"),
       "line 7: bad tracefs root '/sys/kernel/tracing/../../etc'"},
      {replace("instance sluice", "instance ../x"), "line 8: bad instance name '../x'"},
      {replace("instance sluice", "instance .."), "line 8: bad instance name '..'"},
      {replace("enabled_event sched/sched_switch", "enabled_event ../../tracing_on"),
       "line 15: bad event name '../../tracing_on'"},
      {replace("enabled_event sched/sched_switch", "enabled_event sched_switch"),
       "line 15: bad event name 'sched_switch'"},
      {replace("buffer_size_kb_set 2051", "buffer_size_kb_set 2051kb"),
       "line 14: bad size '2051kb'"},
      {replace("trace_clock_found local", "trace_clock_found lo cal"),
       "line 11: bad clock 'lo cal'"},
      {replace("buffer_size_kb_set 2051", "buffer_size_kb_found_cpu 0 100"),
       "both a uniform and per-CPU buffer sizes found"},
      {replace("buffer_size_kb_set 2051", "buffer_percent_found 101"), "line 14: bad buffer_percent '101'"},
      {replace("buffer_size_kb_set 2051", "buffer_percent_set 25"),
       "buffer_percent_set without buffer_percent_found"},
      {replace("owner_boot_id ac1e8864-873f-494b-bdb6-dc42f52752db\n", ""),
       "no 'owner_boot_id' line"},
      {replace("owner_name sluice-probes", "owner_name"), "line 5: not a 'key value' line: 'owner_name'"},
  };
  for (const auto& c : cases) {
    auto parsed = ParseTracefsState(c.text);
    ASSERT_FALSE(parsed.ok()) << c.text;
    EXPECT_EQ(parsed.status().message(), c.error) << c.text;
  }
}

TEST(TracefsStateFileTest, FileNames) {
  uint32_t pid = 0;
  uint64_t start = 0;
  bool tmp = false;
  EXPECT_TRUE(ParseTracefsStateFileName("tracefs-42-813255-0.state", &pid, &start, &tmp));
  EXPECT_EQ(pid, 42u);
  EXPECT_EQ(start, 813255u);
  EXPECT_FALSE(tmp);
  EXPECT_TRUE(ParseTracefsStateFileName("tracefs-42-813255-3.state.tmp", &pid, &start, &tmp));
  EXPECT_TRUE(tmp);
  EXPECT_FALSE(ParseTracefsStateFileName(".lock", &pid, &start, &tmp));
  EXPECT_FALSE(ParseTracefsStateFileName("tracefs-42-x-0.state", &pid, &start, &tmp));
  EXPECT_FALSE(ParseTracefsStateFileName("tracefs-42-1.state", &pid, &start, &tmp));
  EXPECT_FALSE(ParseTracefsStateFileName("tracefs-42-1-0.txt", &pid, &start, &tmp));
}

class TracefsStateDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-state-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(base_); }
  std::string base_;
};

TEST_F(TracefsStateDirTest, SaveWritesBeforeAndRemovesWhenNothingIsLeft) {
  const std::string dir = base_ + "/run/sluice/tracefs-state";
  auto file = TracefsStateFile::Create(dir);
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ((*file)->path().rfind(dir + "/tracefs-" + std::to_string(getpid()) + "-", 0), 0u);
  ASSERT_TRUE((*file)->Save({}).ok());
  EXPECT_FALSE(IsDirectory(dir)) << "nothing changed: nothing written";

  TracefsChanges changes;
  changes.tracefs_root = "/sys/kernel/tracing";
  changes.enabled_events = {"sched/sched_switch"};
  ASSERT_TRUE((*file)->Save(changes).ok());
  struct stat st;
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat((base_ + "/run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u & ~umask(022)) << "parents stay reachable (sluiced's sockets)";
  auto read = ReadTracefsStateFile((*file)->path());
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->changes, changes);
  EXPECT_EQ(read->owner.pid, static_cast<uint32_t>(getpid()));

  changes.enabled_events.clear();
  ASSERT_TRUE((*file)->Save(changes).ok());
  EXPECT_FALSE(PathExists((*file)->path()));
}

TEST_F(TracefsStateDirTest, ADirectoryOthersMayWriteIsRefused) {
  const std::string dir = base_ + "/open";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  Status st = PrepareTracefsStateDir(dir);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), dir + " may be written by others (mode 0777): its files make sluice "
                                "write to tracefs; chmod 700 " + dir);
  EXPECT_FALSE(PrepareTracefsStateDir("relative/dir").ok());
  EXPECT_TRUE(PrepareTracefsStateDir(base_ + "/fine/").ok());
}

}  // namespace
}  // namespace sluice
