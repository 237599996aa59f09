// FtraceCpuReader against a plain file standing in for trace_pipe_raw
// (splice and read work on both), holding pages captured on 6.18
// (tests/data/ftrace/) and encoded with that kernel's formats. The kernel
// behaviour (full pages only from splice, partial pages from read, poll
// watermarks) is covered by ftrace_data_source_kernel_test.cc with
// --ftrace-read=splice.
#include "user/probes/ftrace/ftrace_cpu_reader.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "shm/trace_writer.h"
#include "tests/user/probes/fake_tracefs.h"
#include "tests/user/probes/ftrace/ftrace_test_util.h"
#include "user/probes/ftrace/ftrace_format.h"
#include "user/probes/ftrace/ftrace_page_encoder.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;
// How long a wait on a condition may take before the test fails: long
// enough for a busy machine, only ever reached when something is broken.
constexpr auto kConditionTimeout = std::chrono::seconds(60);

// A writer that holds everything but says it has only room_bytes of room
// (unlimited by default), as a full SMB would.
class RoomLimitedWriter : public HeapTraceWriter {
 public:
  uint64_t RoomBytes(uint64_t up_to) const override { return std::min(up_to, room_bytes.load()); }
  std::atomic<uint64_t> room_bytes{UINT64_MAX};
};

class FtraceCpuReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::LoadTree(testing::kTreeHost, &formats_));
    page_size_ = formats_.header().page_size();
    const testing::CapturedPages captured =
        testing::LoadCapturedPages("tests/data/ftrace/sluice_capture_light_cpu0.hex");
    ASSERT_GE(captured.page_count(page_size_), 2u);
    // Copies of the capture make a file of more pages than one batch.
    for (int i = 0; i < kCopies; i++)
      bytes_.insert(bytes_.end(), captured.bytes.begin(), captured.bytes.end());
    expected_events_ = kCopies * captured.text.size();
    encoder_ = std::make_unique<FtracePageEncoder>(&formats_, 0, FtraceEncodeOptions{});
  }
  std::string WriteFile(const std::vector<uint8_t>& bytes) {
    fake_.WriteBytes("trace_pipe_raw", bytes);
    return fake_.Path("trace_pipe_raw");
  }
  FtraceCpuReaderOptions Options() const {
    FtraceCpuReaderOptions options;
    options.page_size = page_size_;
    return options;
  }
  std::unique_ptr<FtraceCpuReader> Create(const std::string& path, const FtraceCpuReaderOptions& options) {
    auto reader = FtraceCpuReader::Create(0, path, options, encoder_.get(), &writer_, &signal_);
    EXPECT_TRUE(reader.ok()) << reader.status().message();
    return reader.ok() ? std::move(reader).value() : nullptr;
  }
  // A worker started on the whole capture, reading nothing until unpaused.
  std::unique_ptr<FtraceCpuReader> StartPaused() {
    FtraceCpuReaderOptions options = Options();
    options.start_paused = true;
    auto reader = Create(WriteFile(bytes_), options);
    if (reader) reader->StartThread();
    return reader;
  }
  size_t pages() const { return bytes_.size() / page_size_; }
  // The first half of the capture's pages in the file; AppendRest() adds the
  // other half, as a kernel buffer that filled again after a read.
  std::string WriteFirstHalf() { return WriteFile({bytes_.begin(), bytes_.begin() + first_half_bytes()}); }
  void AppendRest(const std::string& path) const {
    std::ofstream(path, std::ios::binary | std::ios::app)
        .write(reinterpret_cast<const char*>(bytes_.data() + first_half_bytes()),
               static_cast<std::streamsize>(bytes_.size() - first_half_bytes()));
  }
  size_t first_half_pages() const { return pages() / 2; }
  size_t first_half_bytes() const { return first_half_pages() * page_size_; }
  // Waits until `reader` took `n` pages (a condition); returns how many it took.
  static size_t WaitForPages(const FtraceCpuReader& reader, size_t n) {
    const auto deadline = Clock::now() + kConditionTimeout;
    while (reader.stats().pages < n && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return reader.stats().pages;
  }

  testing::FakeTracefs fake_;
  FtraceFormatTable formats_;
  uint32_t page_size_ = 0;
  static constexpr int kCopies = 5;
  std::vector<uint8_t> bytes_;
  size_t expected_events_ = 0;
  std::unique_ptr<FtracePageEncoder> encoder_;
  RoomLimitedWriter writer_;
  DrainSignal signal_;
};

TEST_F(FtraceCpuReaderTest, EncodesEveryCapturedEventThroughASmallBatch) {
  FtraceCpuReaderOptions options = Options();
  options.splice_pages = 3;
  auto reader = Create(WriteFile(bytes_), options);
  ASSERT_TRUE(reader);
  reader->StartThread();
  reader->Flush();
  // The worker or the flush encoded it; the flush ended the bundle and
  // published before it returned.
  EXPECT_EQ(reader->encoder_stats().events, expected_events_);
  EXPECT_EQ(reader->encoder_stats().parse_errors, 0u);
  EXPECT_GT(writer_.packets().size(), 0u);
  reader->StopThread();
  // The whole file came in one wake-up: the buffer was that full, at least.
  EXPECT_EQ(reader->wake_stats().most_pages_per_wake, pages());
  const FtraceCpuReaderStats stats = reader->stats();
  EXPECT_EQ(stats.pages, pages());
  EXPECT_EQ(stats.bytes, bytes_.size());
  EXPECT_EQ(stats.read_errors, 0u);
  EXPECT_EQ(encoder_->stats().pages, pages());
}

TEST_F(FtraceCpuReaderTest, AFlushLongerThanOneReadStillReadsEverything) {
  ASSERT_GE(pages(), 2u);
  FtraceCpuReaderOptions options = Options();
  options.splice_pages = 1;
  // Two reads (each "a ring's worth") for the file: the first returns kMore.
  options.max_pages_per_read = static_cast<uint32_t>((pages() + 1) / 2);
  auto reader = Create(WriteFile(bytes_), options);
  ASSERT_TRUE(reader);
  reader->StartThread();
  reader->Flush();
  EXPECT_EQ(reader->encoder_stats().events, expected_events_);
}

// A writer as fast as the reader (here: a "ring" of one page, a file of
// many) cannot keep a flush (the final read is one) going: it ends after
// kMostRingsPerFlush rings' worth; what was in the ring when it began was
// read by then. (The worker is stopped first: reading on its own, it would
// blur the count here.)
TEST_F(FtraceCpuReaderTest, AFlushEndsAfterAFewRingsWorth) {
  ASSERT_GT(pages(), static_cast<size_t>(FtraceReaderWorker::kMostRingsPerFlush));
  FtraceCpuReaderOptions options = Options();
  options.splice_pages = 1;
  options.max_pages_per_read = 1;
  options.start_paused = true;
  auto reader = Create(WriteFile(bytes_), options);
  ASSERT_TRUE(reader);
  reader->StartThread();
  reader->StopThread();  // Paused throughout: it read nothing.
  ASSERT_EQ(reader->stats().pages, 0u);
  reader->SetPaused(false);
  reader->Flush();
  EXPECT_EQ(reader->stats().pages, static_cast<uint64_t>(FtraceReaderWorker::kMostRingsPerFlush));
}

TEST_F(FtraceCpuReaderTest, ReadOnlyWhenThePipeCannotHoldAPage) {
  FtraceCpuReaderOptions options = Options();
  options.splice_pages = 0;  // read(2) throughout, as when pipe-max-size is too small.
  auto reader = Create(WriteFile(bytes_), options);
  ASSERT_TRUE(reader);
  reader->StartThread();
  reader->Flush();
  EXPECT_EQ(reader->encoder_stats().events, expected_events_);
  EXPECT_EQ(reader->stats().pages, pages());
}

TEST_F(FtraceCpuReaderTest, ShortLastPageIsReadWhole) {
  std::vector<uint8_t> bytes(bytes_.begin(), bytes_.begin() + 2 * page_size_ + 100);
  auto reader = Create(WriteFile(bytes), Options());
  ASSERT_TRUE(reader);
  reader->StartThread();
  reader->Flush();
  reader->StopThread();
  EXPECT_EQ(reader->stats().pages, 3u);
  EXPECT_EQ(reader->stats().bytes, bytes.size());
}

TEST_F(FtraceCpuReaderTest, APausedReaderFlushesWithoutReading) {
  auto reader = StartPaused();
  ASSERT_TRUE(reader);
  reader->Flush();
  EXPECT_EQ(reader->stats().pages, 0u);
  reader->SetPaused(false);
  reader->Flush();
  EXPECT_EQ(reader->stats().pages, pages());
}

// The worker names itself after its CPU (top -H, perf, /proc/<pid>/task).
TEST_F(FtraceCpuReaderTest, TheWorkerThreadIsNamedAfterItsCpu) {
  auto reader = StartPaused();
  ASSERT_TRUE(reader);
  // The worker names itself first thing; wait for that (a condition).
  const auto deadline = Clock::now() + kConditionTimeout;
  bool found = false;
  while (!found && Clock::now() < deadline) {
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::string comm;
      std::getline(std::ifstream(task.path() / "comm"), comm);
      if (comm == "ftrace-read/0") found = true;
    }
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(found);
}

TEST_F(FtraceCpuReaderTest, AFlushAfterStopReadsWhatTheWorkerLeft) {
  auto reader = StartPaused();
  ASSERT_TRUE(reader);
  reader->StopThread();
  EXPECT_EQ(reader->stats().pages, 0u);
  reader->SetPaused(false);
  reader->Flush();
  EXPECT_EQ(reader->stats().pages, pages());
  EXPECT_EQ(encoder_->stats().events, expected_events_);
  EXPECT_EQ(reader->encoder_stats().events, expected_events_);
}

TEST_F(FtraceCpuReaderTest, StopWakesAWorkerWithNothingToRead) {
  auto reader = Create(WriteFile({}), Options());
  ASSERT_TRUE(reader);
  reader->StartThread();
  // A plain file polls readable always; after a read that finds nothing,
  // the worker leaves it out of its wait for kDeafMs at a time.
  const auto deadline = Clock::now() + kConditionTimeout;
  while (reader->wake_stats().wakeups < 1 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_GE(reader->wake_stats().wakeups, 1u);
  // Only the stop's wake-up ends that sleep (a lost wake-up would hang the
  // test, and the harness reports it).
  reader->StopThread();
}

// The drain deadline is the worker's own: with a period, data that comes
// after the worker caught up is read without a kick or a flush (a plain file
// never wakes poll() again once read to its end, as a buffer below its
// watermark does not).
TEST_F(FtraceCpuReaderTest, TheDrainDeadlineReadsWithoutAKick) {
  const std::string path = WriteFirstHalf();
  auto reader = Create(path, Options());
  ASSERT_TRUE(reader);
  reader->StartThread(/*drain_period_ms=*/5);
  ASSERT_EQ(WaitForPages(*reader, first_half_pages()), first_half_pages());
  AppendRest(path);
  EXPECT_EQ(WaitForPages(*reader, pages()), pages());
  reader->StopThread();
  EXPECT_EQ(encoder_->stats().events, expected_events_);
}

// Without a drain deadline (the default), a worker that went deaf after a
// kernel wake-up whose read found nothing listens again by itself: data that
// comes later is read without a kick or a flush. (A plain file at its end
// polls readable and reads nothing, as the kernel's buffer sometimes does
// just after a read: once in a kernel suite's run. Deaf until a flush, a
// reader of a session without flushes slept while the kernel overwrote its
// CPU's events: CI, 2026-12-03 and -04.)
TEST_F(FtraceCpuReaderTest, ADeafWorkerListensAgainWithoutADrainDeadline) {
  const std::string path = WriteFirstHalf();
  auto reader = Create(path, Options());
  ASSERT_TRUE(reader);
  reader->StartThread();
  ASSERT_EQ(WaitForPages(*reader, first_half_pages()), first_half_pages());
  // Deaf by now or soon: the file at its end polls readable, and its read
  // finds nothing. Two wake-ups after the first read: one by the file, one
  // after the deaf wait.
  const auto deadline = Clock::now() + kConditionTimeout;
  const uint64_t wakeups = reader->wake_stats().wakeups;
  while (reader->wake_stats().wakeups < wakeups + 2 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_GE(reader->wake_stats().wakeups, wakeups + 2) << "the worker stayed deaf";
  AppendRest(path);
  EXPECT_EQ(WaitForPages(*reader, pages()), pages());
  reader->StopThread();
  EXPECT_EQ(encoder_->stats().events, expected_events_);
}

// A wake-up that takes the near-miss number of pages notifies the drain
// thread's signal once, after publishing the most pages per wake-up (the
// drain thread then lowers the watermark at once).
TEST_F(FtraceCpuReaderTest, ANearMissNotifiesTheDrainSignalOnce) {
  auto reader = Create(WriteFile(bytes_), Options());
  ASSERT_TRUE(reader);
  reader->set_near_miss_pages(pages());
  reader->StartThread(/*drain_period_ms=*/5);
  const auto deadline = Clock::now() + kConditionTimeout;
  while (!signal_.WaitFor(10) && Clock::now() < deadline) {
  }
  EXPECT_GE(reader->wake_stats().most_pages_per_wake, pages());
  // Once: later wake-ups (the drain deadline's, finding nothing) do not.
  const uint64_t wakeups = reader->wake_stats().wakeups;
  while (reader->wake_stats().wakeups < wakeups + 3 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(signal_.WaitFor(0));
  reader->StopThread();
}

// Below the threshold, no notification.
TEST_F(FtraceCpuReaderTest, LessThanANearMissDoesNotNotify) {
  auto reader = Create(WriteFile(bytes_), Options());
  ASSERT_TRUE(reader);
  reader->set_near_miss_pages(pages() + 1);
  reader->StartThread(/*drain_period_ms=*/5);
  const auto deadline = Clock::now() + kConditionTimeout;
  while (reader->wake_stats().most_pages_per_wake < pages() && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(reader->wake_stats().most_pages_per_wake, pages());
  EXPECT_FALSE(signal_.WaitFor(0));
  reader->StopThread();
}

// Each flush is a catch-up of its own, as a worker's wake-up is: the buffer
// never held two flushes' pages at once. Summed while the worker slept
// (no worker here), a recorder at rest, whose workers sleep through
// several flushes, reported its buffers over full and lowered the readers'
// watermark.
TEST_F(FtraceCpuReaderTest, EachFlushIsACatchUpOfItsOwn) {
  const std::string path = WriteFirstHalf();
  auto reader = Create(path, Options());
  ASSERT_TRUE(reader);
  reader->set_near_miss_pages(pages());
  reader->Flush();
  AppendRest(path);
  reader->Flush();
  EXPECT_EQ(reader->stats().pages, pages());
  EXPECT_EQ(reader->wake_stats().most_pages_per_wake,
            std::max(first_half_pages(), pages() - first_half_pages()));
  // Neither flush found the buffer at the near miss.
  EXPECT_FALSE(signal_.WaitFor(0));
}

// A flush in a full SMB waits for room, as reads between flushes do, and
// returns once the service frees some, with every event. (No worker: the
// waits counted are the flush's.)
TEST_F(FtraceCpuReaderTest, AFlushWaitsForRoomInTheWriter) {
  writer_.room_bytes = 0;
  auto reader = Create(WriteFile(bytes_), Options());
  ASSERT_TRUE(reader);
  reader->set_flush_room_patience_for_testing(std::chrono::hours(1));
  std::atomic<bool> flushed{false};
  std::thread flusher([&] {
    reader->Flush();
    flushed = true;
  });
  const auto deadline = Clock::now() + kConditionTimeout;
  while (reader->wake_stats().smb_full_waits == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GE(reader->wake_stats().smb_full_waits, 1u);
  EXPECT_FALSE(flushed) << "the flush wrote without room";
  EXPECT_EQ(reader->stats().pages, 0u);
  writer_.room_bytes = UINT64_MAX;
  flusher.join();
  EXPECT_EQ(reader->encoder_stats().events, expected_events_);
  EXPECT_GT(reader->wake_stats().smb_full_wait_us, 0u);
}

// Flushes from another thread while the worker reads on its own (a drain
// deadline of 1 ms): they take turns at the reader, so each page is read
// once and every event is encoded once. (Under ThreadSanitizer this is the
// test of the read mutex.)
TEST_F(FtraceCpuReaderTest, FlushesFromAnotherThreadTakeTurnsWithTheWorker) {
  const std::string path = WriteFirstHalf();
  auto reader = Create(path, Options());
  ASSERT_TRUE(reader);
  reader->StartThread(/*drain_period_ms=*/1);
  for (int i = 0; i < 20; i++) reader->Flush();
  AppendRest(path);
  for (int i = 0; i < 20; i++) reader->Flush();
  reader->StopThread();
  reader->Flush();
  EXPECT_EQ(reader->stats().pages, pages());
  EXPECT_EQ(reader->encoder_stats().events, expected_events_);
  EXPECT_EQ(encoder_->stats().events, expected_events_);
}

// A flush must end: once the writer had no room for the whole patience, it
// writes the rest anyway (the writer's policy applies to it).
TEST_F(FtraceCpuReaderTest, AFlushWritesRegardlessAfterThePatience) {
  writer_.room_bytes = 0;
  auto reader = Create(WriteFile(bytes_), Options());
  ASSERT_TRUE(reader);
  reader->set_flush_room_patience_for_testing(std::chrono::milliseconds(0));
  reader->StartThread();
  reader->Flush();
  EXPECT_EQ(reader->encoder_stats().events, expected_events_);
  reader->StopThread();
}

TEST_F(FtraceCpuReaderTest, CreateErrors) {
  auto missing = FtraceCpuReader::Create(0, fake_.Path("nope"), Options(), encoder_.get(), &writer_, &signal_);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos);
  FtraceCpuReaderOptions options = Options();
  options.page_size = 3;
  EXPECT_FALSE(FtraceCpuReader::Create(0, WriteFile({}), options, encoder_.get(), &writer_, &signal_).ok());
}

TEST(DrainSignalTest, NotifyWakesWaiterAndIsConsumed) {
  DrainSignal signal;
  signal.Notify();
  EXPECT_TRUE(signal.WaitFor(1000));
  EXPECT_FALSE(signal.WaitFor(1));
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    signal.Notify();
  });
  EXPECT_TRUE(signal.WaitFor(5000));
  t.join();
}

}  // namespace
}  // namespace sluice
