// A fake tracefs tree of plain files under a temp dir, for the tracefs,
// controller and data source tests that need no kernel. Files hold what the
// kernel would print; a write replaces a file's contents (see user/probes/tracefs.h).
#ifndef SLUICE_TESTS_USER_PROBES_FAKE_TRACEFS_H_
#define SLUICE_TESTS_USER_PROBES_FAKE_TRACEFS_H_

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "user/probes/tracefs.h"
#include "user/probes/tracefs_changes.h"

namespace sluice::testing {

class FakeTracefs {
 public:
  FakeTracefs() {
    // /dev/shm when there is one: metadata-heavy tests are faster on tmpfs.
    std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string path = base + "/sluice_fake_tracefs_XXXXXX";
    std::vector<char> tmpl(path.begin(), path.end());
    tmpl.push_back(0);
    const char* dir = mkdtemp(tmpl.data());
    EXPECT_NE(dir, nullptr);
    root_ = dir ? dir : "/nonexistent";
  }
  ~FakeTracefs() {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  FakeTracefs(const FakeTracefs&) = delete;
  FakeTracefs& operator=(const FakeTracefs&) = delete;

  const std::string& root() const { return root_; }
  std::string Path(const std::string& rel) const { return root_ + "/" + rel; }

  void Write(const std::string& rel, const std::string& contents) const {
    std::filesystem::path p(Path(rel));
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << contents;
  }
  void WriteBytes(const std::string& rel, const std::vector<uint8_t>& bytes) const {
    std::filesystem::path p(Path(rel));
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  std::string Read(const std::string& rel) const {
    std::ifstream in(Path(rel), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  void Mkdir(const std::string& rel) const { std::filesystem::create_directories(Path(rel)); }

  // A typical instance at `prefix` ("" = root instance, or "instances/x/"):
  // tracing off, local clock, an unexpanded buffer, two CPUs.
  void PopulateInstance(const std::string& prefix, int cpus = 2) const {
    Write(prefix + "tracing_on", "0\n");
    Write(prefix + "trace_clock", "[local] global counter uptime perf mono mono_raw boot x86-tsc\n");
    Write(prefix + "buffer_size_kb", "7 (expanded: 1408)\n");
    Write(prefix + "buffer_percent", "50\n");
    Write(prefix + "trace", "");
    for (int c = 0; c < cpus; c++) {
      const std::string d = prefix + "per_cpu/cpu" + std::to_string(c) + "/";
      Write(d + "buffer_size_kb", "7 (expanded: 1408)\n");
      Write(d + "stats",
            "entries: 0\noverrun: 0\ncommit overrun: 0\nbytes: 0\n"
            "oldest event ts:     0.000000\nnow ts:   265.483363\n"
            "dropped events: 0\nread events: 0\n");
      Write(d + "trace_pipe_raw", "");
    }
    Write(prefix + "events/sched/sched_switch/enable", "0\n");
    Write(prefix + "events/sched/sched_wakeup/enable", "1\n");  // Someone else's.
    Write(prefix + "events/sched/sched_waking/enable", "0\n");
    Write(prefix + "events/irq/irq_handler_entry/enable", "0\n");
    Write(prefix + "events/ftrace/print/format", "name: print\nID: 5\n");
  }
  // The root-only files, plus the root instance.
  void PopulateRoot(int cpus = 2) const {
    Write("available_events",
          "sched:sched_switch\nsched:sched_wakeup\nsched:sched_waking\nirq:irq_handler_entry\n");
    Write("cpu_online", cpus == 1 ? "0\n" : "0-" + std::to_string(cpus - 1) + "\n");
    Mkdir("instances");
    PopulateInstance("", cpus);
  }

  // A Tracefs on this tree's root instance (after PopulateRoot()).
  std::unique_ptr<Tracefs> Open() const {
    TracefsOptions options;
    options.root = root_;
    options.cpu_online_path = Path("cpu_online");
    auto fs = Tracefs::Open(options);
    EXPECT_TRUE(fs.ok()) << fs.status().message();
    return fs.ok() ? std::move(fs).value() : nullptr;
  }

  // What FtraceSettings leaves in the root instance during a trace, as the
  // kernel would show it: tracing on, the boot clock, 2051 KiB, sched_switch
  // and sched_waking enabled (sched_wakeup stays someone else's). Returns the
  // TracefsChanges that describe it.
  TracefsChanges ApplyTypicalSession() const {
    Write("tracing_on", "1\n");
    Write("trace_clock", "local global [boot]\n");
    Write("buffer_size_kb", "2051\n");
    Write("events/sched/sched_switch/enable", "1\n");
    Write("events/sched/sched_waking/enable", "1\n");
    TracefsChanges c;
    c.tracefs_root = root_;
    c.tracing_on_found = false;
    c.trace_clock_found = "local";
    c.trace_clock_set = "boot";
    c.buffer_size_kb_found = 1408;
    c.buffer_size_kb_set = 2051;
    c.enabled_events = {"sched/sched_switch", "sched/sched_waking"};
    return c;
  }

 private:
  std::string root_;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_USER_PROBES_FAKE_TRACEFS_H_
