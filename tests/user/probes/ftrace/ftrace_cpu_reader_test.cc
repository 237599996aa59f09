// FtraceCpuReader against a plain file standing in for trace_pipe_raw
// (splice and read work on both). The kernel behaviour (full pages only from
// splice, partial pages from read, poll watermarks) is covered by
// ftrace_data_source_kernel_test.cc.
#include "user/probes/ftrace/ftrace_cpu_reader.h"

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/user/probes/fake_tracefs.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;
// How long a wait on a condition may take before the test fails: long
// enough for a busy machine, only ever reached when something is broken.
constexpr auto kConditionTimeout = std::chrono::seconds(60);
constexpr uint32_t kPage = 4096;

std::vector<uint8_t> MakePages(uint64_t count, size_t tail_bytes = 0) {
  std::vector<uint8_t> bytes(count * kPage + tail_bytes);
  for (uint64_t i = 0; i * kPage < bytes.size(); i++) {
    uint64_t tag = i + 1;
    std::memcpy(bytes.data() + i * kPage, &tag, sizeof(tag));
    const size_t end = std::min<size_t>(bytes.size(), (i + 1) * kPage);
    for (size_t b = i * kPage + 8; b < end; b++) bytes[b] = static_cast<uint8_t>(i ^ b);
  }
  return bytes;
}

// Drains `reader` until `want` pages arrived or kConditionTimeout passed;
// checks tags.
std::vector<uint64_t> DrainPages(FtraceCpuReader* reader, DrainSignal* signal, size_t want) {
  std::vector<uint64_t> tags;
  const auto deadline = Clock::now() + kConditionTimeout;
  while (tags.size() < want && Clock::now() < deadline) {
    FtraceCpuReader::Run run = reader->NextReady();
    if (run.count == 0) {
      signal->WaitFor(10);
      continue;
    }
    for (size_t i = 0; i < run.count; i++) {
      uint64_t tag;
      std::memcpy(&tag, run.pages + i * kPage, sizeof(tag));
      tags.push_back(tag);
    }
    reader->Release(run.count);
  }
  return tags;
}

class FtraceCpuReaderTest : public ::testing::Test {
 protected:
  std::string WriteFile(const std::vector<uint8_t>& bytes) {
    fake_.WriteBytes("trace_pipe_raw", bytes);
    return fake_.Path("trace_pipe_raw");
  }
  testing::FakeTracefs fake_;
  DrainSignal signal_;
};

TEST_F(FtraceCpuReaderTest, ReadsEveryPageInOrderThroughASmallPool) {
  const std::string path = WriteFile(MakePages(50));
  FtraceCpuReaderOptions options;
  options.page_size = kPage;
  options.pool_pages = 8;
  options.splice_pages = 3;
  auto reader = FtraceCpuReader::Create(0, path, options, &signal_);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  (*reader)->StartThread();
  // Let the worker fill the pool first, so that it must wait for space.
  const auto deadline = Clock::now() + kConditionTimeout;
  while ((*reader)->ReadyPages() < 8 && Clock::now() < deadline) signal_.WaitFor(10);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ((*reader)->ReadyPages(), 8u);  // Full, and not overfilled.
  std::vector<uint64_t> tags = DrainPages(reader->get(), &signal_, 50);
  ASSERT_EQ(tags.size(), 50u);
  for (uint64_t i = 0; i < 50; i++) EXPECT_EQ(tags[i], i + 1);
  (*reader)->StopThread();
  const FtraceCpuReaderStats stats = (*reader)->stats();
  EXPECT_EQ(stats.pages, 50u);
  EXPECT_EQ(stats.bytes, 50u * kPage);
  EXPECT_EQ(stats.read_errors, 0u);
  EXPECT_GT(stats.pool_full, 0u);  // 50 pages through 8 slots.
}

TEST_F(FtraceCpuReaderTest, PageContentsSurviveTheRing) {
  const std::vector<uint8_t> bytes = MakePages(20);
  const std::string path = WriteFile(bytes);
  FtraceCpuReaderOptions options;
  options.page_size = kPage;
  options.pool_pages = 6;
  auto reader = FtraceCpuReader::Create(0, path, options, &signal_);
  ASSERT_TRUE(reader.ok());
  (*reader)->StartThread();
  std::vector<uint8_t> got;
  const auto deadline = Clock::now() + kConditionTimeout;
  while (got.size() < bytes.size() && Clock::now() < deadline) {
    FtraceCpuReader::Run run = (*reader)->NextReady();
    if (run.count == 0) {
      signal_.WaitFor(10);
      continue;
    }
    got.insert(got.end(), run.pages, run.pages + run.count * kPage);
    (*reader)->Release(run.count);
  }
  EXPECT_TRUE(got == bytes);
}

TEST_F(FtraceCpuReaderTest, ShortLastPageIsZeroFilled) {
  std::vector<uint8_t> bytes = MakePages(2, 100);
  const std::string path = WriteFile(bytes);
  FtraceCpuReaderOptions options;
  options.page_size = kPage;
  auto reader = FtraceCpuReader::Create(0, path, options, &signal_);
  ASSERT_TRUE(reader.ok());
  (*reader)->StartThread();
  const uint64_t ticket = (*reader)->RequestFlush();
  std::vector<uint64_t> tags = DrainPages(reader->get(), &signal_, 3);
  ASSERT_EQ(tags.size(), 3u);
  EXPECT_EQ(tags[2], 3u);
  const auto deadline = Clock::now() + kConditionTimeout;
  while (!(*reader)->FlushDone(ticket) && Clock::now() < deadline) signal_.WaitFor(10);
  EXPECT_TRUE((*reader)->FlushDone(ticket));
}

TEST_F(FtraceCpuReaderTest, PausedReadsNothingAndAcknowledgesFlush) {
  const std::string path = WriteFile(MakePages(4));
  FtraceCpuReaderOptions options;
  options.page_size = kPage;
  options.start_paused = true;
  auto reader = FtraceCpuReader::Create(0, path, options, &signal_);
  ASSERT_TRUE(reader.ok());
  (*reader)->StartThread();
  const uint64_t ticket = (*reader)->RequestFlush();
  const auto deadline = Clock::now() + kConditionTimeout;
  while (!(*reader)->FlushDone(ticket) && Clock::now() < deadline) signal_.WaitFor(10);
  EXPECT_TRUE((*reader)->FlushDone(ticket));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ((*reader)->ReadyPages(), 0u);
  (*reader)->SetPaused(false);
  EXPECT_EQ(DrainPages(reader->get(), &signal_, 4).size(), 4u);
}

TEST_F(FtraceCpuReaderTest, StopDoesNotWaitForThePollTimeout) {
  const std::string path = WriteFile({});
  FtraceCpuReaderOptions options;
  options.page_size = kPage;
  options.poll_timeout_ms = 60 * 1000;
  auto reader = FtraceCpuReader::Create(0, path, options, &signal_);
  ASSERT_TRUE(reader.ok());
  (*reader)->StartThread();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto start = Clock::now();
  (*reader)->StopThread();
  // Half the poll timeout: a stop that waited for the poll would take all of
  // it, while a busy machine may delay a prompt one by seconds.
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(30));
}

TEST_F(FtraceCpuReaderTest, CreateErrors) {
  FtraceCpuReaderOptions options;
  options.page_size = kPage;
  auto missing = FtraceCpuReader::Create(0, fake_.Path("nope"), options, &signal_);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos);
  options.page_size = 3;
  EXPECT_FALSE(FtraceCpuReader::Create(0, WriteFile({}), options, &signal_).ok());
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
