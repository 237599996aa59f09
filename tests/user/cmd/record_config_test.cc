// Unit tests for user/cmd/record_config.h: the flag parser and the TraceConfig
// that `sluice record` builds from flags or reads from -c. No kernel needed;
// the end-to-end runs are in record_kernel_test.cc.
//
// Config files are read from tests/data/configs/ (tests run from the project
// root; SLUICE_TEST_DATA_DIR overrides tests/data).
#include "user/cmd/record_config.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "shm/base/string_util.h"
#include "shm/base/units.h"

namespace sluice {
namespace {

using perfetto::protos::DataSourceConfig;
using perfetto::protos::TraceConfig;

std::string DataPath(const std::string& name) {
  std::string dir = "tests/data";
  if (const char* env = std::getenv("SLUICE_TEST_DATA_DIR")) dir = env;
  return dir + "/configs/" + name;
}

// ParseRecordArgs sees argv as RunRecordCommand does: argv[0] is "record".
StatusOr<RecordArgs> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "record");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return ParseRecordArgs(static_cast<int>(args.size()), argv.data());
}

const DataSourceConfig* FindSource(const TraceConfig& config, const std::string& name) {
  const DataSourceConfig* found = nullptr;
  for (const auto& ds : config.data_sources()) {
    if (ds.config().name() == name) {
      EXPECT_EQ(found, nullptr) << "data source " << name << " twice";
      found = &ds.config();
    }
  }
  return found;
}

std::vector<std::string> Sorted(const google::protobuf::RepeatedPtrField<std::string>& v) {
  std::vector<std::string> out(v.begin(), v.end());
  std::sort(out.begin(), out.end());
  return out;
}

// strtod() accepts "nan", "inf" and "1e300": the parsers must refuse them,
// and -k/--smb must not wrap when narrowed to 32 bits.
TEST(RecordConfigTest, RejectsNonFiniteAndHugeNumbers) {
  for (const char* bad : {"nan", "inf", "nans", "infs", "1e300s"})
    EXPECT_FALSE(ParseDurationMs(bad).ok()) << bad;
  for (const char* bad : {"nan", "inf", "nanmb", "1e300", "1e30gb"})
    EXPECT_FALSE(ParseSizeKb(bad).ok()) << bad;
  EXPECT_FALSE(Parse({"-k", "5000gb"}).ok()) << "-k wraps at 4 TiB";
  EXPECT_FALSE(Parse({"--smb", "5000gb"}).ok()) << "--smb wraps at 4 TiB";
}

TEST(RecordConfigTest, ParseRecordArgsDefaults) {
  auto a = Parse({"-o", "x.pftrace"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->output, "x.pftrace");
  EXPECT_EQ(a->duration_ms, 10000u);
  EXPECT_FALSE(a->duration_set);
  EXPECT_EQ(a->buffer_kb, 64u * 1024);
  EXPECT_EQ(a->kernel_buffer_kb, 2048u);
  EXPECT_EQ(a->smb_kb, 8u * 1024);
  EXPECT_FALSE(a->bpf || a->daemon || a->quiet || a->compression_set || a->no_compact_sched ||
               a->config_is_text);
  EXPECT_TRUE(a->events.empty());
  EXPECT_TRUE(a->config_path.empty());
}

TEST(RecordConfigTest, ParseRecordArgsAllFlags) {
  auto a = Parse({"--out", "y.pftrace", "-t", "5s", "-b", "32mb", "-k", "1mb",
                  "--bpf", "-q", "--compress", "zstd:7", "--no-compact-sched", "--daemon",
                  "--consumer-socket", "/tmp/c.sock", "sched/sched_switch", "ftrace/print"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->output, "y.pftrace");
  EXPECT_EQ(a->duration_ms, 5000u);
  EXPECT_TRUE(a->duration_set);
  EXPECT_EQ(a->buffer_kb, 32u * 1024);
  EXPECT_TRUE(a->buffer_set);
  EXPECT_EQ(a->kernel_buffer_kb, 1024u);
  EXPECT_TRUE(a->kernel_buffer_set);
  EXPECT_TRUE(a->bpf && a->quiet && a->compression_set && a->no_compact_sched && a->daemon);
  EXPECT_EQ(a->compression, (TraceCompression{TraceCodec::kZstd, 7}));
  auto smb = Parse({"--smb", "4mb"});  // In-process only (--daemon refuses it).
  ASSERT_TRUE(smb.ok()) << smb.status().message();
  EXPECT_EQ(smb->smb_kb, 4096u);
  EXPECT_TRUE(smb->smb_set);
  EXPECT_EQ(a->consumer_socket, "/tmp/c.sock");
  EXPECT_EQ(a->events, (std::vector<std::string>{"sched/sched_switch", "ftrace/print"}));

  auto long_forms = Parse({"--time", "2m", "--buffer", "1gb", "--kernel-buffer", "512kb",
                           "--config", "c.pbtx", "--txt", "--quiet"});
  ASSERT_TRUE(long_forms.ok()) << long_forms.status().message();
  EXPECT_EQ(long_forms->duration_ms, 120000u);
  EXPECT_EQ(long_forms->buffer_kb, 1024u * 1024);
  EXPECT_EQ(long_forms->kernel_buffer_kb, 512u);
  EXPECT_EQ(long_forms->config_path, "c.pbtx");
  EXPECT_TRUE(long_forms->config_is_text && long_forms->quiet);
}

TEST(RecordConfigTest, ParseRecordArgsErrors) {
  struct Case {
    std::vector<std::string> args;
    const char* message_has;
  };
  const Case cases[] = {
      {{"--frobnicate"}, "--frobnicate"},
      {{"-o"}, "-o needs a value"},
      {{"-o", "x", "-t"}, "-t needs a value"},
      {{"-t", "soon"}, "soon"},
      {{"-b", "lots"}, "lots"},
      {{"-k", "0"}, "0"},
      {{"-c", "cfg.pbtx", "sched/sched_switch"}, "not both"},
  };
  for (const Case& c : cases) {
    auto a = Parse(c.args);
    ASSERT_FALSE(a.ok()) << c.args[0];
    EXPECT_NE(a.status().message().find(c.message_has), std::string::npos)
        << a.status().message();
  }
  for (const char* help : {"-h", "--help"}) {
    auto a = Parse({help});
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().message(), "help");
  }
}

// --detach, --attach, --stop: what goes with what, refused before anything
// starts with the reason.
TEST(RecordConfigTest, SessionControlFlags) {
  auto detach = Parse({"--daemon", "--detach=night", "-o", "x.pftrace"});
  ASSERT_TRUE(detach.ok()) << detach.status().message();
  EXPECT_EQ(detach->detach_key, "night");
  auto attach = Parse({"--attach=night", "--stop", "-q", "-o", "y.pftrace"});
  ASSERT_TRUE(attach.ok()) << attach.status().message();
  EXPECT_EQ(attach->attach_key, "night");
  EXPECT_TRUE(attach->stop);
  EXPECT_TRUE(attach->daemon) << "--attach implies --daemon";
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const Case cases[] = {
      {{"--detach=k", "-o", "x"},
       "--detach needs --daemon: a detached session runs in sluiced, which outlives this command (start "
       "sluiced and sluice-probes: docs/SERVICE.md)"},
      {{"--daemon", "--detach=k", "-o", "-"},
       "--detach with -o -: standard output goes away with this command; give -o FILE"},
      {{"--stop"}, "--stop stops a detached session: give --attach=KEY with it"},
      {{"--daemon", "--detach=k", "--attach=k"},
       "give --detach=KEY to start a session or --attach=KEY to take one over, not both"},
      {{"--attach=k", "-t", "5s"},
       "--attach=KEY takes only -o, --stop, -q, --compress and --consumer-socket: the session's config "
       "was set when it started (sluice sessions shows it)"},
      {{"--attach=k", "--ring"}, "--attach=KEY takes only"},
      {{"--attach=k", "sched"}, "--attach=KEY takes only"},
  };
  for (const Case& c : cases) {
    auto a = Parse(c.args);
    ASSERT_FALSE(a.ok()) << c.args[0];
    EXPECT_EQ(a.status().message().rfind(c.message, 0), 0u) << a.status().message();
  }
}

TEST(RecordConfigTest, DefaultConfig) {
  auto args = Parse({"-o", "x.pftrace"});
  ASSERT_TRUE(args.ok());
  auto config = BuildRecordConfig(*args);
  ASSERT_TRUE(config.ok()) << config.status().message();
  ASSERT_EQ(config->buffers_size(), 1);
  EXPECT_EQ(config->buffers(0).size_kb(), 64u * 1024);
  EXPECT_EQ(config->buffers(0).fill_policy(), TraceConfig::BufferConfig::RING_BUFFER);
  EXPECT_EQ(config->duration_ms(), 10000u);
  EXPECT_EQ(config->data_sources_size(), 3);

  const DataSourceConfig* ftrace = FindSource(*config, "linux.ftrace");
  ASSERT_NE(ftrace, nullptr);
  std::vector<std::string> want = DefaultRecordEvents();
  std::sort(want.begin(), want.end());
  EXPECT_EQ(Sorted(ftrace->ftrace_config().ftrace_events()), want);
  EXPECT_EQ(ftrace->ftrace_config().buffer_size_kb(), 2048u);
  EXPECT_TRUE(ftrace->ftrace_config().compact_sched().enabled());
  EXPECT_EQ(FindSource(*config, "linux.bpf"), nullptr);

  const DataSourceConfig* ps = FindSource(*config, "linux.process_stats");
  ASSERT_NE(ps, nullptr);
  EXPECT_TRUE(ps->process_stats_config().scan_all_processes_on_start());
  EXPECT_TRUE(ps->process_stats_config().record_thread_names());
  EXPECT_NE(FindSource(*config, "linux.system_info"), nullptr);
}

TEST(RecordConfigTest, DefaultEventsCoverWhatTheUiNeeds) {
  const auto& e = DefaultRecordEvents();
  for (const char* needed : {"sched/sched_switch", "sched/sched_waking", "ftrace/print",
                             "task/task_rename", "task/task_newtask", "sched/sched_process_exit"})
    EXPECT_NE(std::find(e.begin(), e.end(), needed), e.end()) << needed;
  EXPECT_EQ(std::set<std::string>(e.begin(), e.end()).size(), e.size()) << "duplicates";
}

TEST(RecordConfigTest, FlagsShapeTheConfig) {
  auto args = Parse({"-o", "x", "-t", "3s", "-b", "8mb", "-k", "1mb", "--no-compact-sched",
                     "sched/sched_switch", "irq/irq_handler_entry"});
  ASSERT_TRUE(args.ok());
  auto config = BuildRecordConfig(*args);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->duration_ms(), 3000u);
  EXPECT_EQ(config->buffers(0).size_kb(), 8192u);
  const DataSourceConfig* ftrace = FindSource(*config, "linux.ftrace");
  ASSERT_NE(ftrace, nullptr);
  EXPECT_EQ(Sorted(ftrace->ftrace_config().ftrace_events()),
            (std::vector<std::string>{"irq/irq_handler_entry", "sched/sched_switch"}));
  EXPECT_EQ(ftrace->ftrace_config().buffer_size_kb(), 1024u);
  EXPECT_TRUE(ftrace->ftrace_config().has_compact_sched());
  EXPECT_FALSE(ftrace->ftrace_config().compact_sched().enabled());
}

TEST(RecordConfigTest, KernelBufferSizesFtraceAndBpfRing) {
  auto args = Parse({"-o", "x", "--bpf", "-k", "16mb"});
  ASSERT_TRUE(args.ok());
  auto config = BuildRecordConfig(*args);
  ASSERT_TRUE(config.ok()) << config.status().message();
  const DataSourceConfig* ftrace = FindSource(*config, "linux.ftrace");
  const DataSourceConfig* bpf = FindSource(*config, "linux.bpf");
  ASSERT_NE(ftrace, nullptr);
  ASSERT_NE(bpf, nullptr);
  EXPECT_EQ(ftrace->ftrace_config().buffer_size_kb(), 16384u);
  EXPECT_EQ(bpf->bpf_config().ringbuf_size_kb(), 16384u);
}

TEST(RecordConfigTest, BpfSplitsEventsBetweenSources) {
  auto args = Parse({"-o", "x", "--bpf"});
  ASSERT_TRUE(args.ok());
  auto config = BuildRecordConfig(*args);
  ASSERT_TRUE(config.ok()) << config.status().message();
  const DataSourceConfig* ftrace = FindSource(*config, "linux.ftrace");
  const DataSourceConfig* bpf = FindSource(*config, "linux.bpf");
  ASSERT_NE(ftrace, nullptr);
  ASSERT_NE(bpf, nullptr);
  std::vector<std::string> f = Sorted(ftrace->ftrace_config().ftrace_events());
  std::vector<std::string> b = Sorted(bpf->bpf_config().events());
  // The BPF source takes what it implements, ftrace the rest; every default
  // event goes to exactly one of them.
  for (const char* e : {"sched/sched_switch", "sched/sched_waking", "ftrace/print",
                        "task/task_rename", "sched/sched_process_exit"})
    EXPECT_TRUE(std::binary_search(b.begin(), b.end(), e)) << e << " should go to BPF";
  for (const char* e : {"power/cpu_frequency", "power/cpu_idle", "task/task_newtask"})
    EXPECT_TRUE(std::binary_search(f.begin(), f.end(), e)) << e << " should stay on ftrace";
  std::vector<std::string> both;
  std::set_intersection(f.begin(), f.end(), b.begin(), b.end(), std::back_inserter(both));
  EXPECT_TRUE(both.empty()) << "in both sources: " << both[0];
  std::vector<std::string> all = f;
  all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  std::vector<std::string> want = DefaultRecordEvents();
  std::sort(want.begin(), want.end());
  EXPECT_EQ(all, want);

  // Only BPF events: no ftrace data source at all.
  auto only_bpf = Parse({"-o", "x", "--bpf", "sched/sched_switch", "ftrace/print"});
  ASSERT_TRUE(only_bpf.ok());
  auto c2 = BuildRecordConfig(*only_bpf);
  ASSERT_TRUE(c2.ok());
  EXPECT_EQ(FindSource(*c2, "linux.ftrace"), nullptr);
  ASSERT_NE(FindSource(*c2, "linux.bpf"), nullptr);
  EXPECT_EQ(FindSource(*c2, "linux.bpf")->bpf_config().events_size(), 2);
}

TEST(RecordConfigTest, TextConfigFile) {
  auto args = Parse({"-c", DataPath("record_streaming.pbtx"), "--txt", "-o", "x"});
  ASSERT_TRUE(args.ok());
  auto config = BuildRecordConfig(*args);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->duration_ms(), 30000u);
  EXPECT_TRUE(config->write_into_file());
  EXPECT_EQ(config->file_write_period_ms(), 200u);
  EXPECT_EQ(config->buffers(0).size_kb(), 16384u);
  const DataSourceConfig* ftrace = FindSource(*config, "linux.ftrace");
  ASSERT_NE(ftrace, nullptr);
  EXPECT_EQ(ftrace->ftrace_config().ftrace_events_size(), 4);

  // -t overrides the file's duration.
  auto with_t = Parse({"-c", DataPath("record_streaming.pbtx"), "--txt", "-t", "2s"});
  ASSERT_TRUE(with_t.ok());
  auto c2 = BuildRecordConfig(*with_t);
  ASSERT_TRUE(c2.ok());
  EXPECT_EQ(c2->duration_ms(), 2000u);
}

TEST(RecordConfigTest, BrokenTextConfigNamesLineAndColumn) {
  const std::string path = DataPath("record_broken.pbtx");
  auto args = Parse({"-c", path, "--txt"});
  ASSERT_TRUE(args.ok());
  auto config = BuildRecordConfig(*args);
  ASSERT_FALSE(config.ok());
  const std::string& m = config.status().message();
  EXPECT_NE(m.find(path), std::string::npos) << m;
  EXPECT_NE(m.find("line 5, column 12"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << "one line: " << m;
}

TEST(RecordConfigTest, MissingConfigFile) {
  auto args = Parse({"-c", "/nonexistent/sluice.pbtx", "--txt"});
  ASSERT_TRUE(args.ok());
  auto config = BuildRecordConfig(*args);
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("/nonexistent/sluice.pbtx"), std::string::npos);
}

TEST(RecordConfigTest, BinaryConfigFile) {
  TraceConfig want;
  want.add_buffers()->set_size_kb(4096);
  want.set_duration_ms(1234);
  auto* ds = want.add_data_sources()->mutable_config();
  ds->set_name("linux.ftrace");
  ds->mutable_ftrace_config()->add_ftrace_events("sched/sched_switch");
  char path[] = "/tmp/sluice-record-config-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string bytes = want.SerializeAsString();
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
  auto args = Parse({"-c", path});
  ASSERT_TRUE(args.ok());
  auto config = BuildRecordConfig(*args);
  unlink(path);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->SerializeAsString(), bytes);
}

TEST(RecordConfigTest, TextConfigWithoutTxtIsAnErrorOrHarmless) {
  // A text file read as binary usually fails to parse; whatever libprotobuf
  // makes of it, there is no crash and a failure says to add --txt.
  auto args = Parse({"-c", DataPath("record_broken.pbtx")});
  ASSERT_TRUE(args.ok());
  auto config = BuildRecordConfig(*args);
  if (!config.ok()) {
    EXPECT_NE(config.status().message().find("--txt"), std::string::npos);
  }
}

TEST(RecordConfigTest, PerfettoAndroidConfigParses) {
  // A config written for Android's perfetto: data sources sluice lacks are
  // kept in the config (record reports and skips them), unknown fields are
  // skipped with a warning, and the Linux parts are read.
  auto args = Parse({"-c", DataPath("android_full.pbtx"), "--txt"});
  ASSERT_TRUE(args.ok());
  auto config = BuildRecordConfig(*args);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->buffers_size(), 2);
  EXPECT_EQ(config->duration_ms(), 10000u);
  EXPECT_NE(FindSource(*config, "android.log"), nullptr);
  EXPECT_NE(FindSource(*config, "android.power"), nullptr);
  EXPECT_NE(FindSource(*config, "track_event"), nullptr);
  const DataSourceConfig* ftrace = FindSource(*config, "linux.ftrace");
  ASSERT_NE(ftrace, nullptr);
  EXPECT_EQ(ftrace->ftrace_config().ftrace_events_size(), 12);
  EXPECT_EQ(ftrace->ftrace_config().buffer_size_kb(), 2048u);
  EXPECT_TRUE(ftrace->ftrace_config().compact_sched().enabled());
  const DataSourceConfig* ps = FindSource(*config, "linux.process_stats");
  ASSERT_NE(ps, nullptr);
  EXPECT_EQ(ps->target_buffer(), 1u);
}

TEST(RecordConfigTest, CategoryWordsBecomeAtraceCategories) {
  auto a = Parse({"-o", "t.pftrace", "sched", "freq", "sched/sched_wakeup", "irq_handler_entry", "am"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->categories, (std::vector<std::string>{"sched", "freq", "am"}));
  EXPECT_EQ(a->events, (std::vector<std::string>{"sched/sched_wakeup", "irq_handler_entry"}));
  auto config = BuildRecordConfig(*a);
  ASSERT_TRUE(config.ok()) << config.status().message();
  const DataSourceConfig* ftrace = FindSource(*config, "linux.ftrace");
  ASSERT_NE(ftrace, nullptr);
  EXPECT_EQ(Sorted(ftrace->ftrace_config().atrace_categories()), (std::vector<std::string>{"am", "freq", "sched"}));
  // Given categories or events, the defaults are not added.
  EXPECT_EQ(Sorted(ftrace->ftrace_config().ftrace_events()),
            (std::vector<std::string>{"irq_handler_entry", "sched/sched_wakeup"}));

  auto only_categories = Parse({"-o", "t.pftrace", "idle"});
  ASSERT_TRUE(only_categories.ok());
  auto idle = BuildRecordConfig(*only_categories);
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(FindSource(*idle, "linux.ftrace")->ftrace_config().ftrace_events_size(), 0);
  EXPECT_TRUE(Parse({"--list"})->list);
  EXPECT_FALSE(Parse({"-c", "cfg.pbtx", "sched"}).ok());
}

TEST(RecordConfigTest, UnknownNamesAreRefusedWithTheNearestKnown) {
  const std::vector<std::string> available = {"sched/sched_switch", "sched/sched_waking", "power/cpu_idle",
                                              "irq/irq_handler_entry"};
  auto check = [&](std::vector<std::string> words, bool android = false) {
    words.insert(words.begin(), {"-o", "t.pftrace"});
    auto a = Parse(words);
    EXPECT_TRUE(a.ok()) << a.status().message();
    auto config = BuildRecordConfig(*a);
    EXPECT_TRUE(config.ok()) << config.status().message();
    return CheckRecordEventNames(*config, available, android);
  };
  EXPECT_TRUE(check({"sched", "idle", "sched/*", "sched/sched_switch", "irq_handler_entry", "ftrace/print"}).ok());
  EXPECT_EQ(check({"sched/sched_swich"}).message(),
            "this kernel has no event 'sched/sched_swich': did you mean sched/sched_switch? "
            "(sluice record --list names the categories; tracefs' available_events the events)");
  EXPECT_NE(check({"shed"}).message().find("no event or category 'shed': did you mean sched?"), std::string::npos);
  EXPECT_NE(check({"block/*"}).message().find("no event 'block/*'"), std::string::npos);
  EXPECT_NE(check({"nothing_like_it_at_all"}).message().find("'nothing_like_it_at_all' (sluice record --list"),
            std::string::npos);

  // Categories in a config: checked too, except on Android (vendor ones).
  TraceConfig config;
  auto* ftrace = config.add_data_sources()->mutable_config();
  ftrace->set_name("linux.ftrace");
  ftrace->mutable_ftrace_config()->add_atrace_categories("freqq");
  EXPECT_NE(CheckRecordEventNames(config, available, false).message().find("no category 'freqq': did you mean freq?"),
            std::string::npos);
  EXPECT_TRUE(CheckRecordEventNames(config, available, true).ok());
}

TEST(RecordConfigTest, ListsCategoriesWithWhatThisKernelHas) {
  const std::vector<std::string> available = {"sched/sched_switch", "power/cpu_idle"};
  const std::string listed = DescribeRecordCategories(&available);
  EXPECT_NE(listed.find("idle           CPU idle\n               power/cpu_idle\n"), std::string::npos) << listed;
  EXPECT_NE(listed.find("binder_driver  Binder kernel driver\n               (none of its events in this kernel)\n"),
            std::string::npos);
  EXPECT_NE(listed.find("am             Activity Manager (user space)\n               (user space: trace_marker"),
            std::string::npos);
  for (std::string_view line : {std::string_view(listed)}) EXPECT_FALSE(line.empty());
  size_t start = 0;
  while (start < listed.size()) {
    const size_t end = listed.find('\n', start);
    EXPECT_LE(end - start, 80u) << listed.substr(start, end - start);
    start = end + 1;
  }
  // Without tracefs: the full lists.
  EXPECT_NE(DescribeRecordCategories(nullptr).find("binder/binder_transaction"), std::string::npos);
}

// Writes `text` to a temp file and returns its path ("" on failure).
std::string TempConfig(const std::string& text) {
  char path[] = "/tmp/sluice-record-config-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "";
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok ? path : "";
}

TEST(RecordConfigTest, TextConfigsAreStrictUnlessAskedNotToBe) {
  const std::string path = TempConfig("duration_ms: 1000\nbuffers { size_kb: 1024 }\nunique_sesion_name: \"x\"\n");
  ASSERT_FALSE(path.empty());
  auto strict = BuildRecordConfig(*Parse({"-c", path, "--txt"}));
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find(path + ": line 3, column "), std::string::npos)
      << strict.status().message();
  EXPECT_NE(strict.status().message().find("unique_sesion_name"), std::string::npos) << strict.status().message();
  EXPECT_NE(strict.status().message().find("--allow-unknown-fields"), std::string::npos);
  auto lenient = BuildRecordConfig(*Parse({"-c", path, "--txt", "--allow-unknown-fields"}));
  ASSERT_TRUE(lenient.ok()) << lenient.status().message();
  EXPECT_EQ(lenient->duration_ms(), 1000u);
  unlink(path.c_str());
  EXPECT_FALSE(Parse({"--allow-unknown-fields"}).ok());
}

TEST(RecordConfigTest, EmptyAndDirectoryConfigsAreErrors) {
  const std::string empty = TempConfig("");
  auto e = BuildRecordConfig(*Parse({"-c", empty, "--txt"}));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "config: " + empty + " is empty: -c takes a TraceConfig file");
  unlink(empty.c_str());
  auto d = BuildRecordConfig(*Parse({"-c", "/tmp", "--txt"}));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "config: /tmp is a directory: -c takes a TraceConfig file");
}

TEST(RecordConfigTest, FlagsOnAConfigAreAppliedAndSaidOrRefused) {
  const std::string path = TempConfig(
      "duration_ms: 10000\nbuffers { size_kb: 1024 }\n"
      "data_sources { config { name: \"linux.ftrace\" ftrace_config { ftrace_events: \"sched/sched_switch\" "
      "buffer_size_kb: 512 } } }\n");
  ASSERT_FALSE(path.empty());
  std::vector<std::string> notes;
  auto config = BuildRecordConfig(*Parse({"-c", path, "--txt", "-t", "2s", "-b", "4mb", "-k", "1mb"}), &notes);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->duration_ms(), 2000u);
  EXPECT_EQ(config->buffers(0).size_kb(), 4096u);
  EXPECT_EQ(FindSource(*config, "linux.ftrace")->ftrace_config().buffer_size_kb(), 1024u);
  EXPECT_EQ(notes, (std::vector<std::string>{"-t: duration_ms 10000 -> 2000", "-b: buffers[0].size_kb 1024 -> 4096",
                                             "-k: linux.ftrace ftrace_config.buffer_size_kb 512 -> 1024"}));
  unlink(path.c_str());

  const std::string two = TempConfig("buffers { size_kb: 1024 }\nbuffers { size_kb: 1024 }\n");
  auto refused = BuildRecordConfig(*Parse({"-c", two, "--txt", "-b", "4mb"}));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "-b with a config of 2 buffers: set each buffer's size_kb in the config");
  auto no_source = BuildRecordConfig(*Parse({"-c", two, "--txt", "-k", "4mb"}));
  ASSERT_FALSE(no_source.ok());
  EXPECT_NE(no_source.status().message().find("no linux.ftrace or linux.bpf"), std::string::npos);
  unlink(two.c_str());

  auto bpf = Parse({"-c", "x.pbtx", "--bpf"});
  ASSERT_FALSE(bpf.ok());
  EXPECT_NE(bpf.status().message().find("add a linux.bpf data source"), std::string::npos);
  auto smb = Parse({"--daemon", "--smb", "16mb"});
  ASSERT_FALSE(smb.ok());
  EXPECT_NE(smb.status().message().find("sluice-probes has its own"), std::string::npos);
}

// --ftrace-read sets how the ftrace source reads the kernel's buffers: on
// the default config, on every linux.ftrace source of a config file (said in
// a note), and refused where there is nothing to read or no such mode.
TEST(RecordConfigTest, FtraceReadModeFlag) {
  const DataSourceConfig* ftrace = nullptr;
  auto defaults = BuildRecordConfig(*Parse({"-o", "x"}));
  ASSERT_TRUE(defaults.ok()) << defaults.status().message();
  ASSERT_NE(ftrace = FindSource(*defaults, "linux.ftrace"), nullptr);
  EXPECT_FALSE(ftrace->ftrace_config().has_ring_buffer_read_mode()) << "AUTO unless asked";
  const std::pair<const char*, sluice::protos::FtraceReadMode> modes[] = {
      {"auto", sluice::protos::FTRACE_READ_MODE_AUTO},
      {"mapped", sluice::protos::FTRACE_READ_MODE_MAPPED},
      {"splice", sluice::protos::FTRACE_READ_MODE_SPLICE}};
  for (const auto& [word, mode] : modes) {
    auto args = Parse({"-o", "x", std::string("--ftrace-read=") + word});
    ASSERT_TRUE(args.ok()) << args.status().message();
    auto config = BuildRecordConfig(*args);
    ASSERT_TRUE(config.ok()) << config.status().message();
    ASSERT_NE(ftrace = FindSource(*config, "linux.ftrace"), nullptr);
    EXPECT_TRUE(ftrace->ftrace_config().has_ring_buffer_read_mode());
    EXPECT_EQ(ftrace->ftrace_config().ring_buffer_read_mode(), mode) << word;
  }

  const std::string path = TempConfig(
      "buffers { size_kb: 1024 }\n"
      "data_sources { config { name: \"linux.ftrace\" ftrace_config { ftrace_events: \"sched/sched_switch\" "
      "ring_buffer_read_mode: FTRACE_READ_MODE_MAPPED } } }\n");
  ASSERT_FALSE(path.empty());
  auto as_written = BuildRecordConfig(*Parse({"-c", path, "--txt"}));
  ASSERT_TRUE(as_written.ok()) << as_written.status().message();
  EXPECT_EQ(FindSource(*as_written, "linux.ftrace")->ftrace_config().ring_buffer_read_mode(),
            sluice::protos::FTRACE_READ_MODE_MAPPED);
  std::vector<std::string> notes;
  auto config = BuildRecordConfig(*Parse({"-c", path, "--txt", "--ftrace-read", "splice"}), &notes);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(FindSource(*config, "linux.ftrace")->ftrace_config().ring_buffer_read_mode(),
            sluice::protos::FTRACE_READ_MODE_SPLICE);
  EXPECT_EQ(notes, (std::vector<std::string>{"--ftrace-read: linux.ftrace ftrace_config.ring_buffer_read_mode "
                                             "FTRACE_READ_MODE_MAPPED -> FTRACE_READ_MODE_SPLICE"}));
  unlink(path.c_str());

  const std::string no_ftrace = TempConfig("buffers { size_kb: 1024 }\n");
  auto refused = BuildRecordConfig(*Parse({"-c", no_ftrace, "--txt", "--ftrace-read=splice"}));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "--ftrace-read: the config has no linux.ftrace data source to read");
  unlink(no_ftrace.c_str());
  auto bpf_only = BuildRecordConfig(*Parse({"-o", "x", "--bpf", "ftrace/print", "--ftrace-read=splice"}));
  ASSERT_FALSE(bpf_only.ok());
  EXPECT_EQ(bpf_only.status().message(),
            "--ftrace-read: nothing is recorded through ftrace (--bpf takes every event given)");
  auto bad = Parse({"--ftrace-read=mmap"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--ftrace-read: 'mmap' is not a read mode: give auto, mapped or splice");
  auto attach = Parse({"--attach=k", "--ftrace-read=splice"});
  ASSERT_FALSE(attach.ok());
  EXPECT_EQ(attach.status().message().rfind("--attach=KEY takes only", 0), 0u);
}

// Without -c the trace streams into the file; --ring and --discard keep the
// buffer in memory with their fill policy, and are written at the end.
TEST(RecordConfigTest, ModesSetWriteIntoFileAndFillPolicy) {
  auto stream = BuildRecordConfig(*Parse({"-o", "x"}));
  ASSERT_TRUE(stream.ok());
  EXPECT_TRUE(stream->write_into_file());
  auto ring = BuildRecordConfig(*Parse({"-o", "x", "--ring", "-b", "2mb"}));
  ASSERT_TRUE(ring.ok());
  EXPECT_FALSE(ring->write_into_file());
  EXPECT_EQ(ring->buffers(0).fill_policy(), TraceConfig::BufferConfig::RING_BUFFER);
  EXPECT_EQ(ring->buffers(0).size_kb(), 2048u);
  auto discard = BuildRecordConfig(*Parse({"-o", "x", "--discard"}));
  ASSERT_TRUE(discard.ok());
  EXPECT_FALSE(discard->write_into_file());
  EXPECT_EQ(discard->buffers(0).fill_policy(), TraceConfig::BufferConfig::DISCARD);
  auto both = Parse({"--ring", "--discard"});
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().message(), "give one of --stream, --ring and --discard");
  EXPECT_TRUE(Parse({"--ring", "--ring"}).ok());
}

// A config is honoured as written (a RING_BUFFER without write_into_file is
// a flight recorder); a mode flag on top of it is applied and said.
TEST(RecordConfigTest, AConfigKeepsItsModeUnlessAFlagChangesIt) {
  const std::string path = TempConfig(
      "buffers { size_kb: 2048 fill_policy: RING_BUFFER }\nbuffers { size_kb: 1024 }\n"
      "data_sources { config { name: \"linux.ftrace\" } }\n");
  ASSERT_FALSE(path.empty());
  auto as_written = BuildRecordConfig(*Parse({"-c", path, "--txt"}));
  ASSERT_TRUE(as_written.ok()) << as_written.status().message();
  EXPECT_FALSE(as_written->write_into_file());
  std::vector<std::string> notes;
  auto streamed = BuildRecordConfig(*Parse({"-c", path, "--txt", "--stream"}), &notes);
  ASSERT_TRUE(streamed.ok());
  EXPECT_TRUE(streamed->write_into_file());
  EXPECT_EQ(notes, (std::vector<std::string>{"--stream: write_into_file false -> true"}));
  notes.clear();
  auto discard = BuildRecordConfig(*Parse({"-c", path, "--txt", "--discard"}), &notes);
  ASSERT_TRUE(discard.ok());
  EXPECT_EQ(discard->buffers(0).fill_policy(), TraceConfig::BufferConfig::DISCARD);
  EXPECT_EQ(discard->buffers(1).fill_policy(), TraceConfig::BufferConfig::DISCARD);
  EXPECT_EQ(notes, (std::vector<std::string>{
                       "--discard: write_into_file false -> false, every buffer's fill_policy -> DISCARD"}));
  unlink(path.c_str());
}

TEST(RecordConfigTest, ConfigFromStandardInput) {
  const std::string path = TempConfig("duration_ms: 1234\nbuffers { size_kb: 1024 }\n");
  ASSERT_FALSE(path.empty());
  // -c - reads stdin: point stdin at the file for this test, then back.
  const int saved = dup(STDIN_FILENO);
  ASSERT_NE(freopen(path.c_str(), "r", stdin), nullptr);
  auto config = BuildRecordConfig(*Parse({"-c", "-", "--txt", "-o", "t.pftrace"}));
  // An empty stdin is refused.
  ASSERT_NE(freopen("/dev/null", "r", stdin), nullptr);
  auto empty = BuildRecordConfig(*Parse({"-c", "-", "--txt", "-o", "t.pftrace"}));
  dup2(saved, STDIN_FILENO);
  close(saved);
  clearerr(stdin);
  unlink(path.c_str());
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->duration_ms(), 1234u);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "config: standard input is empty: pipe a TraceConfig into -c -");
}

TEST(RecordConfigTest, FieldsSluiceIgnoresAreNamed) {
  auto args = Parse({"-o", "t.pftrace"});
  ASSERT_TRUE(args.ok());
  auto config = BuildRecordConfig(*args);
  ASSERT_TRUE(config.ok());
  EXPECT_TRUE(ConfigFieldsSluiceIgnores(*config).empty()) << Join(ConfigFieldsSluiceIgnores(*config), ", ");
  config->set_compression_type(TraceConfig::COMPRESSION_TYPE_DEFLATE);  // Implemented.
  config->mutable_compression()->mutable_zstd();
  config->set_unique_session_name("mine");
  config->mutable_trigger_config()->set_trigger_timeout_ms(1000);
  config->mutable_buffers(0)->set_transfer_on_clone(true);
  // A field sluice's protos do not have, as a newer Perfetto's binary config holds it.
  config->GetReflection()->MutableUnknownFields(&*config)->AddVarint(9999, 1);
  EXPECT_EQ(ConfigFieldsSluiceIgnores(*config),
            (std::vector<std::string>{"field 9999 (unknown to sluice)", "buffers[0].transfer_on_clone"}));
}

// --compress sets TraceConfig.compression, on the default config and over a
// config file's (with a note); a text config's upstream field is read as is.
TEST(RecordConfigTest, CompressSetsTheConfigsCompression) {
  auto args = Parse({"-o", "t.pftrace", "--compress", "zstd"});
  ASSERT_TRUE(args.ok()) << args.status().message();
  auto config = BuildRecordConfig(*args);
  ASSERT_TRUE(config.ok());
  EXPECT_TRUE(config->compression().has_zstd());
  EXPECT_EQ(TraceCompressionOf(*config), (TraceCompression{TraceCodec::kZstd, 0}));
  args = Parse({"-o", "t.pftrace"});
  config = BuildRecordConfig(*args);
  EXPECT_FALSE(config->has_compression());

  const std::string path = "/tmp/sluice-record-config-compress.pbtx";
  {
    std::ofstream f(path);
    f << "buffers { size_kb: 1024 }\n"
         "data_sources { config { name: \"linux.ftrace\" } }\n"
         "compression { deflate {} zstd { level: 9 } }\n";
  }
  args = Parse({"-c", path.c_str(), "--txt", "-o", "t.pftrace"});
  ASSERT_TRUE(args.ok());
  config = BuildRecordConfig(*args);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(TraceCompressionOf(*config), (TraceCompression{TraceCodec::kZstd, 9}));
  EXPECT_TRUE(ConfigFieldsSluiceIgnores(*config).empty());
  args = Parse({"-c", path.c_str(), "--txt", "-o", "t.pftrace", "--compress", "none"});
  std::vector<std::string> notes;
  config = BuildRecordConfig(*args, &notes);
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(config->has_compression());
  EXPECT_EQ(notes, (std::vector<std::string>{"--compress: compression zstd (level 9) -> none"}));
  unlink(path.c_str());

  for (const char* bad : {"gzip", "zstd:99"}) {
    auto r = Parse({"-o", "t.pftrace", "--compress", bad});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message().rfind("--compress: ", 0), 0u) << r.status().message();
  }
  // A value is needed: a bare --compress before another option is an error
  // naming it, not a silent default.
  auto bare = Parse({"-o", "t.pftrace", "--compress", "-q"});
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.status().message().find("unknown compression '-q'"), std::string::npos) << bare.status().message();
}

// --rotate takes a size or a duration (one of each at most), --keep and
// --on-rotate go with it, and an always-on recorder runs until stopped with
// compressed files unless told otherwise.
TEST(RecordConfigTest, RotateTakesASizeAndADurationAndCompressesByDefault) {
  auto a = Parse({"-o", "d/t.pftrace", "--rotate", "100mb", "--rotate", "10m", "--keep", "24",
                  "--on-rotate", "echo"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->rotation.max_bytes, 100ull << 20);
  EXPECT_EQ(a->rotation.max_ms, 600000u);
  EXPECT_EQ(a->rotation.keep, 24u);
  EXPECT_EQ(a->on_rotate, "echo");
  auto config = BuildRecordConfig(*a);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->duration_ms(), 0u) << "until stopped";
  EXPECT_TRUE(config->write_into_file());
  EXPECT_EQ(TraceCompressionOf(*config), (TraceCompression{TraceCodec::kZstd, 0}));
  a = Parse({"-o", "t.pftrace", "--rotate", "1h", "-t", "2h", "--compress", "none"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  config = BuildRecordConfig(*a);
  EXPECT_EQ(config->duration_ms(), 7200000u);
  EXPECT_FALSE(TraceCompressionOf(*config).enabled());

  struct Bad {
    std::vector<std::string> args;
    const char* says;
  };
  for (const Bad& bad : std::vector<Bad>{
           {{"-o", "t.pftrace", "--rotate", "100"}, "needs a unit"},
           {{"-o", "t.pftrace", "--rotate", "10kb"}, "64kb or more"},
           {{"-o", "t.pftrace", "--rotate", "500ms"}, "shorter than a second"},
           {{"-o", "t.pftrace", "--rotate", "1mb", "--rotate", "2mb"}, "one size"},
           {{"-o", "t.pftrace", "--rotate", "1m", "--rotate", "2m"}, "one duration"},
           {{"-o", "t.pftrace", "--keep", "3"}, "--keep goes with --rotate"},
           {{"-o", "t.pftrace", "--on-rotate", "true"}, "--on-rotate goes with --rotate"},
           {{"-o", "t.pftrace", "--rotate", "1mb", "--keep", "0"}, "from 1 to"},
           {{"-o", "-", "--rotate", "1mb"}, "not -o -"},
           {{"-o", "t.pftrace", "--rotate", "1mb", "--ring"}, "drop --ring"},
           {{"-o", "t.pftrace", "--rotate", "1mb", "--daemon", "--detach=k", "--on-rotate", "true"},
            "--detach ends"},
       }) {
    auto r = Parse(bad.args);
    ASSERT_FALSE(r.ok()) << bad.says;
    EXPECT_NE(r.status().message().find(bad.says), std::string::npos) << r.status().message();
  }
}

// A -c config's sluice_rotation (TraceConfig 60012) stands for --rotate and
// --keep; the flags win over it, and --on-rotate goes with either.
TEST(RecordConfigTest, ConfigRotationStandsForTheFlags) {
  const std::string path = "/tmp/sluice-record-config-rotation.pbtx";
  {
    std::ofstream f(path);
    f << "buffers { size_kb: 1024 }\n"
         "data_sources { config { name: \"linux.ftrace\" } }\n"
         "write_into_file: true\n"
         "sluice_rotation { max_file_bytes: 104857600 max_file_duration_ms: 600000 keep_files: 5 }\n";
  }
  auto a = Parse({"-c", path.c_str(), "--txt", "-o", "d/t.pftrace", "--on-rotate", "echo"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto config = BuildRecordConfig(*a);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_TRUE(ConfigFieldsSluiceIgnores(*config).empty());
  std::vector<std::string> notes;
  ASSERT_TRUE(ApplyConfigRotation(&*a, &*config, &notes).ok());
  EXPECT_EQ(a->rotation.max_bytes, 100ull << 20);
  EXPECT_EQ(a->rotation.max_ms, 600000u);
  EXPECT_EQ(a->rotation.keep, 5u);
  EXPECT_EQ(TraceCompressionOf(*config), (TraceCompression{TraceCodec::kZstd, 0}));
  EXPECT_EQ(notes.size(), 1u);

  a = Parse({"-c", path.c_str(), "--txt", "-o", "t.pftrace", "--rotate", "1h", "--keep", "2"});
  config = BuildRecordConfig(*a);
  notes.clear();
  ASSERT_TRUE(ApplyConfigRotation(&*a, &*config, &notes).ok());
  EXPECT_EQ(a->rotation.max_bytes, 0u) << "--rotate replaces the config's";
  EXPECT_EQ(a->rotation.max_ms, 3600000u);
  EXPECT_EQ(a->rotation.keep, 2u);

  {
    std::ofstream f(path);
    f << "buffers { size_kb: 1024 }\nwrite_into_file: true\nsluice_rotation { max_file_bytes: 1000 }\n";
  }
  a = Parse({"-c", path.c_str(), "--txt", "-o", "t.pftrace"});
  config = BuildRecordConfig(*a);
  Status small = ApplyConfigRotation(&*a, &*config);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.message().find("under 64 KiB"), std::string::npos) << small.message();
  {
    std::ofstream f(path);
    f << "buffers { size_kb: 1024 }\nwrite_into_file: true\n";
  }
  a = Parse({"-c", path.c_str(), "--txt", "-o", "t.pftrace", "--keep", "3"});
  ASSERT_TRUE(a.ok()) << "checked once the config is read";
  config = BuildRecordConfig(*a);
  Status keep = ApplyConfigRotation(&*a, &*config);
  ASSERT_FALSE(keep.ok());
  EXPECT_NE(keep.message().find("sluice_rotation"), std::string::npos) << keep.message();
  unlink(path.c_str());
}

}  // namespace
}  // namespace sluice
