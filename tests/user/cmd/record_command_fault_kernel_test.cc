// `sluice record` under faults of its output path, on the real kernel (root,
// tracefs), with the binaries run as a user runs them (build/sluice,
// build/sluiced, build/sluice-probes; tests/user/cmd/record_test_util.h).
//
// Each case says what was lost and checks that the exit message (and the
// trace, where it can) says so:
//
//   DiskFullInProcess, DiskFullThroughDaemon
//     The output is on a 512 KiB tmpfs and the test writes trace_marker lines
//     until the recorder stops. Only ftrace/print is recorded: with the
//     default events a busy machine (a build beside the tests) filled the
//     disk before the first marker was written. Lost: everything after the
//     last packet that fit. Checked: exit 1; one line "sluice record: <path>:
//     no space left on device after B bytes (P packets written, the file is
//     valid up to there); K packets (N bytes) after that were not written;
//     ..." with B
//     and P equal to the file's size and packet count and K >= 1; the file a
//     valid Trace to its last byte; the last markers written are not in it;
//     tracefs restored (by the recorder, or by the running sluice-probes at
//     the end of the session).
//
//   SluicedKilledMidSession
//     sluiced gets SIGKILL once data flows (a marker written after the start
//     is in the streamed file). Lost: what sluiced held in its buffers and
//     had not written yet, and the trace's TraceStats. Checked: `sluice
//     record --daemon` exits 1 at once with "lost the connection to sluiced
//     (it exited or was killed) during the session; <path> is valid up to its
//     last whole packet: B bytes, P packets ..." matching the file; the file
//     a valid Trace to its last byte; `sluice stats` rows say the trace did
//     not end cleanly (trace_stats_missing); sluice-probes, left without a
//     service, puts tracefs back.
//
// The tmpfs is mounted under the test's temp dir and unmounted in TearDown.
// tracefs is compared before and after each test (TracefsState).
#include <fcntl.h>
#include <regex.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "perfetto/trace/trace_packet.pb.h"
#include "tests/child_process_test_util.h"
#include "tests/kernel_test_util.h"
#include "tests/user/cmd/record_test_util.h"
#include "tests/user/probes/tracefs_test_util.h"
#include "user/probes/tracefs.h"
#include "user/trace/trace_file_reader.h"
#include "user/trace/trace_health.h"

namespace sluice {
namespace {

// The first match of POSIX extended regex `pattern` in `text`, and its
// groups (groups[0] the whole match); false when none. POSIX regcomp, not
// std::regex: libstdc++'s regex trips g++ 12's -Wmaybe-uninitialized in the
// ASan build (-Werror).
bool RegexSearch(const std::string& text, const std::string& pattern, std::vector<std::string>* groups) {
  regex_t re;
  if (regcomp(&re, pattern.c_str(), REG_EXTENDED) != 0) {
    ADD_FAILURE() << "bad regex: " << pattern;
    return false;
  }
  regmatch_t m[8];
  bool found = regexec(&re, text.c_str(), 8, m, 0) == 0;
  regfree(&re);
  groups->clear();
  for (size_t i = 0; found && i < 8; ++i)
    groups->push_back(m[i].rm_so < 0 ? "" : text.substr(static_cast<size_t>(m[i].rm_so),
                                                         static_cast<size_t>(m[i].rm_eo - m[i].rm_so)));
  return found;
}

using testing::ChildProcess;
using testing::NowMs;
using testing::ReadTracefsState;
using testing::RestoreTracefsState;
using testing::SluicedAndProbes;
using testing::TracefsState;
using testing::WriteMarkerUntilInFile;

// The timeout of every wait on a condition: it only matters when something
// is broken (stretched for slow guests: SLUICE_TEST_TIMEOUT_SCALE).
uint64_t WaitMs() { return testing::ScaledTimeoutMs(60000); }

// The file as read back: its summary and the highest marker seq in it.
struct FileContents {
  Status status;
  TraceFileSummary summary;
  int64_t max_seq = -1;
};

FileContents ReadBack(const std::string& path, const std::string& prefix) {
  FileContents c;
  c.status = ReadTraceFile(
      path,
      [&](std::string_view bytes) {
        perfetto::protos::TracePacket p;
        if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
        for (const auto& e : p.ftrace_events().event()) {
          const std::string& buf = e.print().buf();
          if (buf.compare(0, prefix.size(), prefix) != 0) continue;
          char* end = nullptr;
          long long seq = strtoll(buf.c_str() + prefix.size(), &end, 10);
          if (end != buf.c_str() + prefix.size() && seq > c.max_seq) c.max_seq = seq;
        }
      },
      &c.summary);
  return c;
}

// A valid Trace to its last byte, of `bytes` bytes and `packets` packets (as
// the exit line said).
void ExpectHolds(const FileContents& c, uint64_t bytes, uint64_t packets) {
  ASSERT_TRUE(c.status.ok()) << c.status.message();
  EXPECT_FALSE(c.summary.truncated);
  EXPECT_EQ(c.summary.valid_bytes, c.summary.bytes) << "not a valid Trace to its last byte";
  EXPECT_EQ(c.summary.bytes, bytes);
  EXPECT_EQ(c.summary.packets, packets);
}

class RecordFaultKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_dir_ = testing::SluiceBinDir();
    const std::string why_not = testing::WhyRecordTestsCannotRun(bin_dir_);
    if (!why_not.empty()) SLUICE_KERNEL_SKIP(why_not);
    dir_ = testing::MakeTempDir("sluice-record-fault-");
    ASSERT_FALSE(dir_.empty());
    static int run = 0;
    prefix_ = "sluice-fault-" + std::to_string(getpid()) + "." + std::to_string(++run) + "-";
    before_ = ReadTracefsState();
    armed_ = true;
  }

  void TearDown() override {
    if (!armed_) return;
    if (!small_.empty()) {
      EXPECT_EQ(umount(small_.c_str()), 0) << "umount " << small_ << ": " << strerror(errno);
      rmdir(small_.c_str());
    }
    TracefsState after = ReadTracefsState();
    EXPECT_EQ(after, before_) << "tracefs not left as found\nbefore: " << before_.ToString()
                              << "\nafter:  " << after.ToString();
    if (!HasFailure()) {
      testing::RemoveTempDir(dir_);
    } else {
      fprintf(stderr, "kept %s for inspection\n", dir_.c_str());
    }
  }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // A tmpfs of `kb` KiB at <dir>/small; returns its path.
  std::string MountSmallFs(uint64_t kb) {
    std::string path = Path("small");
    EXPECT_EQ(mkdir(path.c_str(), 0755), 0);
    const std::string options = "size=" + std::to_string(kb) + "k";
    if (mount("tmpfs", path.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      ADD_FAILURE() << "mount -t tmpfs -o " << options << " " << path << ": " << strerror(errno);
      return "";
    }
    small_ = path;
    return path;
  }

  // Starts `sluice record ARGS -o output` and waits until a marker written
  // now shows up in the streamed file.
  bool StartRecording(std::vector<std::string> args, const std::string& output,
                      ChildProcess* recorder) {
    std::vector<std::string> argv = {bin_dir_ + "/sluice", "record"};
    argv.insert(argv.end(), args.begin(), args.end());
    // --file-lag 1s: the file a second behind at rest too (the wait below).
    argv.insert(argv.end(), {"-t", "600s", "-q", "--file-lag", "1s", "-o", output});
    EXPECT_TRUE(recorder->Start(argv, Path("record.out"), Path("record.err")));
    if (!WriteMarkerUntilInFile(prefix_ + "ready", output, WaitMs(), recorder)) {
      ADD_FAILURE() << "the recorder did not start recording: " << recorder->Describe();
      return false;
    }
    return true;
  }

  // Writes "<prefix><seq> <padding>" markers, at most about 10k a second,
  // until the recorder exits (or WaitMs()). Returns how many were written.
  uint64_t FillUntilExit(ChildProcess* recorder) {
    int fd = open((std::string(Tracefs::kDefaultRoot) + "/trace_marker").c_str(),
                  O_WRONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    const std::string padding(160, 'p');
    const uint64_t deadline = NowMs() + WaitMs();
    uint64_t seq = 0;
    while (recorder->running() && NowMs() < deadline) {
      for (int i = 0; i < 100; i++, seq++) {
        std::string m = prefix_ + std::to_string(seq) + " " + padding;
        (void)!write(fd, m.data(), m.size());
      }
      usleep(10 * 1000);
    }
    close(fd);
    return seq;
  }

  // Waits until sluice-probes (still running) has put tracefs back.
  bool WaitForTracefsRestored() {
    const uint64_t deadline = NowMs() + WaitMs();
    while (!(ReadTracefsState() == before_) && NowMs() < deadline) usleep(20 * 1000);
    return ReadTracefsState() == before_;
  }

  // The disk-full case for a recorder started with `args`.
  void RecordOntoAFullDisk(const std::vector<std::string>& args) {
    const std::string small = MountSmallFs(512);
    ASSERT_FALSE(small.empty());
    const std::string output = small + "/trace.pftrace";
    ChildProcess recorder;
    std::vector<std::string> with_events = args;
    with_events.push_back("ftrace/print");
    ASSERT_TRUE(StartRecording(with_events, output, &recorder));
    const uint64_t written = FillUntilExit(&recorder);
    ASSERT_TRUE(recorder.Wait(WaitMs())) << "the recorder did not stop on a full disk: "
                                        << recorder.Describe();
    EXPECT_TRUE(recorder.exited_normally_with(1)) << recorder.Describe();

    // One line names the path, the bytes and packets written, and the loss.
    const std::string line("sluice record: " + output +
                          ": no space left on device after ([0-9]+) bytes? \\(([0-9]+) packets? "
                          "written, the file is valid up to there\\); ([0-9]+) packets? \\([0-9]+ "
                          "bytes?\\) after that (was|were) not written; free space there or write the "
                          "trace elsewhere\n");
    std::vector<std::string> m;
    const std::string err = recorder.Stderr();
    ASSERT_TRUE(RegexSearch(err, line, &m)) << recorder.Describe();
    const uint64_t bytes = std::stoull(m[1]), packets = std::stoull(m[2]),
                   lost = std::stoull(m[3]);
    EXPECT_GE(lost, 1u) << err;

    // The file holds exactly that, and is a valid Trace to its last byte.
    FileContents c = ReadBack(output, prefix_);
    ExpectHolds(c, bytes, packets);
    EXPECT_GT(c.summary.bytes, 0u);
    // What was lost: the markers written last are not in the file.
    EXPECT_LT(c.max_seq + 1, static_cast<int64_t>(written))
        << "every marker made it into the file: nothing was lost?";
    fprintf(stderr, "[ measured ] %s\n[ measured ] file %llu bytes, %llu packets; markers "
            "written %llu, highest in the file %lld\n",
            m[0].c_str(), static_cast<unsigned long long>(c.summary.bytes),
            static_cast<unsigned long long>(c.summary.packets),
            static_cast<unsigned long long>(written), static_cast<long long>(c.max_seq));
  }

  std::string bin_dir_, dir_, small_, prefix_;
  TracefsState before_;
  bool armed_ = false;
};

TEST_F(RecordFaultKernelTest, DiskFullInProcess) {
  RecordOntoAFullDisk({});
}

TEST_F(RecordFaultKernelTest, DiskFullThroughDaemon) {
  SluicedAndProbes daemon;
  ASSERT_TRUE(daemon.Start(bin_dir_, dir_));
  RecordOntoAFullDisk({"--daemon", "--consumer-socket", daemon.consumer_socket()});
  EXPECT_NE(daemon.sluiced.Stderr().find("stopping: trace file: no space left on device"),
            std::string::npos)
      << daemon.sluiced.Describe();
  // The session is over: the probes, still running, put tracefs back.
  EXPECT_TRUE(WaitForTracefsRestored()) << "tracefs not restored at the end of the session";
  EXPECT_TRUE(daemon.probes.running()) << daemon.probes.Describe();
  daemon.probes.Terminate(WaitMs());
  daemon.sluiced.Terminate(WaitMs());
  EXPECT_TRUE(daemon.probes.exited_normally_with(0)) << daemon.probes.Describe();
  EXPECT_TRUE(daemon.sluiced.exited_normally_with(0)) << daemon.sluiced.Describe();
}

TEST_F(RecordFaultKernelTest, SluicedKilledMidSession) {
  SluicedAndProbes daemon;
  ASSERT_TRUE(daemon.Start(bin_dir_, dir_));
  const std::string output = Path("trace.pftrace");
  ChildProcess recorder;
  ASSERT_TRUE(StartRecording({"--daemon", "--consumer-socket", daemon.consumer_socket()}, output,
                             &recorder));
  // Data flows: a second marker, written after the first was seen, is in the
  // file too (so sluiced has written at least twice).
  ASSERT_TRUE(WriteMarkerUntilInFile(prefix_ + "flowing", output, WaitMs(), &recorder))
      << recorder.Describe();

  daemon.sluiced.Signal(SIGKILL);
  const uint64_t killed_ms = NowMs();
  ASSERT_TRUE(daemon.sluiced.Wait(WaitMs()));
  ASSERT_TRUE(recorder.Wait(WaitMs())) << "sluice record did not notice sluiced is gone: "
                                      << recorder.Describe();
  const uint64_t exit_ms = NowMs() - killed_ms;
  EXPECT_TRUE(recorder.exited_normally_with(1)) << recorder.Describe();
  // Promptly: from the closed socket (about 10 ms here), not from a request
  // timing out (ConsumerIpcClient::kRequestTimeoutMs is 30 s).
  EXPECT_LT(exit_ms, testing::ScaledTimeoutMs(10000)) << recorder.Describe();

  const std::string line("sluice record: lost the connection to sluiced \\(it exited or was "
                        "killed\\) during the session; " + output +
                        " is valid up to its last whole packet: ([0-9]+) bytes?, ([0-9]+) packets?"
                        "( \\(the [0-9]+ bytes of a partial packet were cut off\\))?; what sluiced "
                        "had not written yet is lost; see its log \\(journalctl -u sluiced\\) and "
                        "start it again\n");
  std::vector<std::string> m;
  const std::string err = recorder.Stderr();
  ASSERT_TRUE(RegexSearch(err, line, &m)) << recorder.Describe();
  FileContents c = ReadBack(output, prefix_);
  ExpectHolds(c, std::stoull(m[1]), std::stoull(m[2]));
  // The trace says it did not end cleanly: no TraceStats.
  auto health = AnalyzeTraceFile(output);
  ASSERT_TRUE(health.ok()) << health.status().message();
  EXPECT_FALSE(health->has_trace_stats);
  bool stats_missing_row = false;
  for (const HealthRow& r : health->rows) stats_missing_row |= r.name == "trace_stats_missing";
  EXPECT_TRUE(stats_missing_row) << FormatHealthTable(*health);
  fprintf(stderr, "[ measured ] exit %llu ms after SIGKILL: %s\n",
          static_cast<unsigned long long>(exit_ms), m[0].c_str());

  // sluice-probes lost its service: it must put tracefs back on its own.
  const bool restored = WaitForTracefsRestored();
  EXPECT_TRUE(restored) << "sluice-probes did not restore tracefs after sluiced died";
  if (!restored) RestoreTracefsState(before_);
  daemon.probes.Terminate(WaitMs());
  EXPECT_TRUE(daemon.probes.exited_normally_with(0)) << daemon.probes.Describe();
}

// --rotate onto a disk that fills: the recording ends with one line naming
// the file the disk filled in; every file before it is a whole trace (its
// trailer written) and that one is valid to its last byte; no .recording
// name is left.
void RotateOntoAFullDisk(const std::string& small, const std::vector<std::string>& args, const std::string& prefix,
                         ChildProcess* recorder, uint64_t wait_ms) {
  std::vector<std::string> argv = {testing::SluiceBinDir() + "/sluice", "record", "--rotate", "128kb",
                                   "--compress", "none", "-q", "--file-lag", "1s", "-o", small + "/trace.pftrace"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("ftrace/print");
  ASSERT_TRUE(recorder->Start(argv, small + "/../record.out", small + "/../record.err"));
  // Once the first file grew twice (its head, then the probes' state, which
  // the first cut waits for), fills until the recorder gives up
  // (FillUntilExit's pace, inline: the fixture's helper needs a started
  // recording of one file).
  const std::string first = small + "/trace.000001.pftrace.recording";
  off_t first_size = 0;
  for (const uint64_t until = NowMs() + wait_ms;;) {
    struct stat st {};
    if (stat(first.c_str(), &st) == 0 && st.st_size > 0) {
      if (first_size == 0) first_size = st.st_size;
      if (st.st_size > first_size) break;
    }
    ASSERT_TRUE(recorder->running() && NowMs() < until) << "no recording: " << recorder->Describe();
    usleep(20 * 1000);
  }
  int fd = open((std::string(Tracefs::kDefaultRoot) + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const std::string padding(160, 'p');
  const uint64_t deadline = NowMs() + wait_ms;
  for (uint64_t seq = 0; recorder->running() && NowMs() < deadline;) {
    for (int i = 0; i < 100; i++, seq++) {
      std::string m = prefix + std::to_string(seq) + " " + padding;
      (void)!write(fd, m.data(), m.size());
    }
    usleep(10 * 1000);
  }
  close(fd);
  ASSERT_TRUE(recorder->Wait(wait_ms)) << "the recorder did not stop on a full disk: " << recorder->Describe();
  EXPECT_TRUE(recorder->exited_normally_with(1)) << recorder->Describe();
  const std::string err = recorder->Stderr();
  std::vector<std::string> m;
  ASSERT_TRUE(RegexSearch(err,
                          "sluice record: (" + small + "/trace\\.[0-9]{6}\\.pftrace): no space left on device "
                          "after ([0-9]+) bytes? \\(([0-9]+) packets? written, the file is valid up to there\\)",
                          &m))
      << err;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(small)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 2u) << err;
  EXPECT_EQ(files.back(), m[1]) << "the disk filled in the last file";
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    EXPECT_EQ(f.find(".recording"), std::string::npos);
    FileContents c = ReadBack(f, prefix);
    ASSERT_TRUE(c.status.ok()) << c.status.message();
    EXPECT_FALSE(c.summary.truncated);
    EXPECT_EQ(c.summary.valid_bytes, c.summary.bytes) << "not a valid Trace to its last byte";
    if (f != files.back()) {
      EXPECT_GT(c.summary.packets, 4u);
    }
  }
  FileContents last = ReadBack(files.back(), prefix);
  ExpectHolds(last, std::stoull(m[2]), std::stoull(m[3]));
}

TEST_F(RecordFaultKernelTest, RotatingDiskFullInProcessKeepsEveryFinishedFileWhole) {
  const std::string small = MountSmallFs(640);
  ASSERT_FALSE(small.empty());
  ChildProcess recorder;
  RotateOntoAFullDisk(small, {}, prefix_, &recorder, WaitMs());
}

// The same through sluiced, which creates the files in the directory the
// recorder handed it.
TEST_F(RecordFaultKernelTest, RotatingDiskFullThroughDaemonKeepsEveryFinishedFileWhole) {
  SluicedAndProbes daemon;
  ASSERT_TRUE(daemon.Start(bin_dir_, dir_));
  const std::string small = MountSmallFs(640);
  ASSERT_FALSE(small.empty());
  ChildProcess recorder;
  RotateOntoAFullDisk(small, {"--daemon", "--consumer-socket", daemon.consumer_socket()}, prefix_, &recorder,
                      WaitMs());
  EXPECT_TRUE(WaitForTracefsRestored()) << "tracefs not restored at the end of the session";
  daemon.probes.Terminate(WaitMs());
  daemon.sluiced.Terminate(WaitMs());
  EXPECT_TRUE(daemon.sluiced.exited_normally_with(0)) << daemon.sluiced.Describe();
}

}  // namespace
}  // namespace sluice
