// FtraceMappedCpuReader on the real kernel (root, tracefs, Linux 6.10+ for
// the ring buffer mapping; older kernels skip, saying so).
//
// Each test owns a tracefs instance of its own (so only its markers are in
// the buffer: trace_marker writes need no event enabled), with a small
// buffer, and one writer thread pinned to one CPU whose buffer the reader
// maps. What is checked:
//   - every marker exactly once and in order, read in place, including a
//     partial reader page that the kernel kept writing into between reads;
//   - forced overruns (the reader paused while three buffers' worth is
//     written) are counted exactly: markers written = markers read + the
//     meta page's overrun, and the first page after the loss says so;
//   - the kernel refuses to resize a mapped buffer (EBUSY), and the instance
//     can be removed once the reader is gone; tracefs is left as found.
#include "user/probes/ftrace/ftrace_mapped_cpu_reader.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "perfetto/trace/trace_packet.pb.h"
#include "shm/trace_writer.h"
#include "tests/child_process_test_util.h"
#include "tests/kernel_test_util.h"
#include "tests/user/probes/tracefs_test_util.h"
#include "user/probes/ftrace/ftrace_format.h"

namespace sluice {
namespace {

constexpr char kTracefs[] = "/sys/kernel/tracing";

uint32_t FirstAllowedCpu() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return 0;
  for (uint32_t cpu = 0; cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET(cpu, &allowed)) return cpu;
  return 0;
}

bool WriteText(const std::string& path, const std::string& text, int* error = nullptr) {
  int fd = open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) {
    if (error) *error = errno;
    return false;
  }
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (!ok && error) *error = errno;
  close(fd);
  return ok;
}

class FtraceMappedCpuReaderKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) SLUICE_KERNEL_SKIP("needs root to control tracefs");
    if (access((std::string(kTracefs) + "/tracing_on").c_str(), F_OK) != 0)
      SLUICE_KERNEL_SKIP("no tracefs at /sys/kernel/tracing");
    before_ = testing::ReadTracefsState();
    instance_ = std::string(kTracefs) + "/instances/sluice_test_mapped_" + std::to_string(getpid());
    ASSERT_EQ(mkdir(instance_.c_str(), 0755), 0) << instance_ << ": " << strerror(errno);
    made_instance_ = true;
    ASSERT_TRUE(WriteText(instance_ + "/buffer_size_kb", "64"));
    cpu_ = FirstAllowedCpu();
    auto table = FtraceFormatTable::LoadAll(std::string(kTracefs) + "/events", nullptr);
    ASSERT_TRUE(table.ok()) << table.status().message();
    table_ = std::make_unique<FtraceFormatTable>(std::move(*table));
    encoder_ = std::make_unique<FtracePageEncoder>(table_.get(), cpu_, FtraceEncodeOptions());
  }
  void TearDown() override {
    reader_.reset();  // Unmapped: the instance can go.
    if (made_instance_) {
      EXPECT_EQ(rmdir(instance_.c_str()), 0) << instance_ << ": " << strerror(errno);
    }
    if (IsSkipped()) return;
    testing::TracefsState after = testing::ReadTracefsState();
    EXPECT_EQ(after, before_) << "before: " << before_.ToString() << "\nafter:  " << after.ToString();
  }

  // Maps the CPU's buffer; skips where the kernel has no mapping.
  void MapReader(bool paused) {
    auto reader = FtraceMappedCpuReader::Create(
        cpu_, instance_ + "/per_cpu/cpu" + std::to_string(cpu_) + "/trace_pipe_raw", table_->header(),
        encoder_.get(), &writer_, &signal_, paused);
    if (!reader.ok()) {
      if (reader.status().message().find("no ring buffer mapping") != std::string::npos)
        SLUICE_KERNEL_SKIP(reader.status().message());
      FAIL() << reader.status().message();
    }
    reader_ = std::move(*reader);
  }

  // Writes markers "<tag> seq=<n>" for n in [from, to) from a thread pinned
  // to cpu_.
  void WriteMarkers(uint32_t from, uint32_t to) {
    std::thread writer([&] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu_, &one);
      ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
      int fd = open((instance_ + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
      ASSERT_GE(fd, 0);
      char buf[96];
      for (uint32_t i = from; i < to; i++) {
        int n = snprintf(buf, sizeof(buf), "%s seq=%u", tag_.c_str(), i);
        ASSERT_EQ(write(fd, buf, static_cast<size_t>(n)), n);
      }
      close(fd);
    });
    writer.join();
  }


  struct Seen {
    std::vector<uint32_t> seqs;  // In trace order.
    uint64_t lost_bundles = 0;
  };
  Seen Decode() {
    Seen seen;
    const std::string prefix = tag_ + " seq=";
    for (const std::string& bytes : writer_.packets()) {
      perfetto::protos::TracePacket p;
      EXPECT_TRUE(p.ParseFromString(bytes));
      if (!p.has_ftrace_events()) continue;
      if (p.ftrace_events().lost_events()) seen.lost_bundles++;
      for (const auto& e : p.ftrace_events().event()) {
        if (!e.has_print() || e.print().buf().compare(0, prefix.size(), prefix) != 0) continue;
        seen.seqs.push_back(static_cast<uint32_t>(std::stoul(e.print().buf().substr(prefix.size()))));
      }
    }
    return seen;
  }

  testing::TracefsState before_;
  std::string instance_;
  bool made_instance_ = false;
  uint32_t cpu_ = 0;
  std::string tag_ = "sluice-mapped-" + std::to_string(getpid());
  std::unique_ptr<FtraceFormatTable> table_;
  std::unique_ptr<FtracePageEncoder> encoder_;
  HeapTraceWriter writer_;
  DrainSignal signal_;
  std::unique_ptr<FtraceMappedCpuReader> reader_;
};

// Small batches with a flush after each: every flush reads the reader page
// the kernel is still writing into, and the next one continues it.
TEST_F(FtraceMappedCpuReaderKernelTest, EveryMarkerOnceInOrderAcrossPartialPages) {
  MapReader(false);
  if (IsSkipped()) return;
  reader_->StartThread();
  uint32_t written = 0;
  for (uint32_t batch : {3u, 1u, 40u, 2u, 500u, 7u}) {
    WriteMarkers(written, written + batch);
    written += batch;
    reader_->Flush();
  }
  reader_->StopThread();
  reader_->Flush();  // What came after the last flush.
  const Seen seen = Decode();
  ASSERT_EQ(seen.seqs.size(), written);
  for (uint32_t i = 0; i < written; i++) ASSERT_EQ(seen.seqs[i], i) << "at " << i;
  EXPECT_EQ(seen.lost_bundles, 0u);
  EXPECT_GT(reader_->stats().resumed_reads, 0u) << "no flush continued a partial reader page";
  EXPECT_EQ(reader_->meta().overrun, 0u);
}

// The reader stays paused while several buffers' worth is written: the ring
// overwrites the oldest pages. What is read plus what the kernel counts as
// overrun is exactly what was written; the markers read are the newest, in
// order, and the trace says where the loss was.
TEST_F(FtraceMappedCpuReaderKernelTest, ForcedOverrunsAreCountedExactly) {
  MapReader(true);
  if (IsSkipped()) return;
  const uint64_t overrun_before = reader_->meta().overrun;
  reader_->StartThread();
  constexpr uint32_t kWritten = 20000;  // ~1 MB of records into a 64 KiB buffer.
  WriteMarkers(0, kWritten);
  reader_->SetPaused(false);
  reader_->Flush();
  reader_->StopThread();
  reader_->Flush();  // What came after the last flush.
  const Seen seen = Decode();
  const uint64_t overrun = reader_->meta().overrun - overrun_before;
  EXPECT_GT(overrun, 0u) << "nothing was overwritten: the buffer held the whole run";
  EXPECT_EQ(seen.seqs.size() + overrun, kWritten)
      << seen.seqs.size() << " read, " << overrun << " counted as overrun";
  ASSERT_FALSE(seen.seqs.empty());
  EXPECT_EQ(seen.seqs.back(), kWritten - 1);
  for (size_t i = 1; i < seen.seqs.size(); i++) ASSERT_GT(seen.seqs[i], seen.seqs[i - 1]) << "at " << i;
  EXPECT_GE(seen.lost_bundles, 1u) << "no bundle says events were lost";
  EXPECT_GE(reader_->encoder_stats().lost_event_pages, 1u);
}

// While mapped, the kernel refuses to resize the buffer; once the reader is
// gone it accepts again.
TEST_F(FtraceMappedCpuReaderKernelTest, AMappedBufferCannotBeResized) {
  MapReader(false);
  if (IsSkipped()) return;
  int error = 0;
  EXPECT_FALSE(WriteText(instance_ + "/buffer_size_kb", "128", &error));
  EXPECT_EQ(error, EBUSY) << strerror(error);
  reader_.reset();
  EXPECT_TRUE(WriteText(instance_ + "/buffer_size_kb", "128", &error)) << strerror(error);
}

}  // namespace
}  // namespace sluice
