// Tests of the service's file rotation (SessionOptions.rotation) in one
// process with a test producer: every packet in exactly one file, each file
// a whole trace (config, descriptors and clocks at its head, the stats of
// its own period last), the producers asked to write their state again at
// each cut, --keep, and the refusals.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "perfetto/common/trace_stats.pb.h"
#include "service/tracing_service.h"
#include "tests/service/service_test_util.h"

namespace sluice {
namespace {

using perfetto::protos::TracePacket;
using testing::MakeConfig;
using testing::TestPacketId;
using testing::TestProducer;

constexpr uint32_t kPackets = 3000;  // About 1.5 MB of test packets.

class TracingServiceRotationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-rotation-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    loop_thread_ = std::make_unique<EventLoopThread>();
    service_ = std::make_unique<TracingService>(loop_thread_->loop());
    auto conn = service_->ConnectProducer(&producer_, ProducerOptions{"rotation-test", 1 << 20, 4096});
    ASSERT_TRUE(conn.ok()) << conn.status().message();
    producer_.Attach(std::move(conn.value()));
    DataSourceDescriptor d;
    d.name = "test.ds";
    d.will_notify_on_stop = true;
    d.handles_incremental_state_clear = true;
    producer_.connection()->RegisterDataSource(d);
    consumer_ = service_->ConnectConsumer();
  }
  void TearDown() override {
    consumer_.reset();
    producer_.Detach();
    service_.reset();
    loop_thread_.reset();
    std::filesystem::remove_all(dir_);
  }

  perfetto::protos::TraceConfig StreamingConfig() const {
    // Holds all kPackets: the writes outrun the service's periodic reads.
    auto config = MakeConfig(4096, "test.ds");
    config.set_write_into_file(true);
    config.set_file_write_period_ms(100);
    return config;
  }
  static SessionOptions Rotating(uint64_t max_bytes, uint32_t max_ms = 0, uint32_t keep = 0) {
    SessionOptions options;
    options.rotation.max_bytes = max_bytes;
    options.rotation.max_ms = max_ms;
    options.rotation.keep = keep;
    options.rotation.stem = "t";
    options.rotation.extension = ".pftrace";
    return options;
  }
  Status Enable(const perfetto::protos::TraceConfig& config, const SessionOptions& options) {
    ScopedFd dir(open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    return consumer_->EnableTracing(config, dir.get(), options);
  }
  // Writes packets [first, end) in steps, flushing each.
  void WritePackets(TraceWriter* writer, uint32_t first, uint32_t end) {
    for (uint32_t i = first; i < end; i++) {
      testing::WriteTestPacket(writer, {1, 0, i});
      if (i % 100 == 99) writer->Flush();
    }
    writer->Flush();
  }
  // Stops the session and waits for its end, taking the finished-file
  // notices on the way (each one cuts the wait short).
  void StopAndWait() {
    ASSERT_TRUE(consumer_->DisableTracing().ok());
    std::string error;
    ASSERT_TRUE(testing::WaitUntil([&] {
      const bool ended = consumer_->WaitForTracingDisabled(1000, &error);
      TakeFinished();
      return ended;
    }));
    EXPECT_EQ(error, "");
  }
  void TakeFinished() {
    for (std::string& name : consumer_->TakeFinishedFiles()) finished_.push_back(std::move(name));
  }
  std::vector<std::string> Files() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  std::vector<TracePacket> Packets(const std::string& name) const {
    std::ifstream in(dir_ + "/" + name, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bool ok = false;
    auto packets = testing::ParseTraceBytes(bytes, &ok);
    EXPECT_TRUE(ok) << name << " is not a whole trace";
    return packets;
  }

  std::string dir_;
  std::unique_ptr<EventLoopThread> loop_thread_;
  std::unique_ptr<TracingService> service_;
  TestProducer producer_;
  std::unique_ptr<ConsumerEndpoint> consumer_;
  std::vector<std::string> finished_;  // TakeFinishedFiles, in order.
};

TEST_F(TracingServiceRotationTest, EveryPacketInExactlyOneFileEachAWholeTrace) {
  ASSERT_TRUE(Enable(StreamingConfig(), Rotating(128 * 1024)).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer_.WaitForStart(&started));
  auto writer = producer_.arbiter()->CreateTraceWriter(started.config.target_buffer(), BufferExhaustedPolicy::kStall);
  WritePackets(writer.get(), 0, kPackets);
  writer.reset();
  StopAndWait();
  const auto whole = consumer_->GetTraceStats();
  ASSERT_TRUE(whole.ok());

  const std::vector<std::string> files = Files();
  ASSERT_GE(files.size(), 8u) << "1.5 MB in 128 KiB files";
  EXPECT_EQ(finished_, files) << "one notice per file, in order";
  std::vector<uint32_t> seqs;
  uint64_t chunks_written = 0;
  for (size_t f = 0; f < files.size(); f++) {
    SCOPED_TRACE(files[f]);
    char expected_name[32];
    snprintf(expected_name, sizeof expected_name, "t.%06zu.pftrace", f + 1);
    EXPECT_EQ(files[f], expected_name);
    const std::vector<TracePacket> packets = Packets(files[f]);
    ASSERT_GE(packets.size(), 4u);
    // Head: config, descriptors, clocks; tail: clocks, then the stats.
    EXPECT_TRUE(packets[0].has_trace_config());
    EXPECT_TRUE(packets[1].has_extension_descriptor());
    EXPECT_TRUE(packets[2].has_clock_snapshot());
    EXPECT_TRUE(packets[packets.size() - 2].has_clock_snapshot());
    ASSERT_TRUE(packets.back().has_trace_stats());
    chunks_written += packets.back().trace_stats().buffer_stats(0).chunks_written();
    int stats = 0;
    for (const TracePacket& p : packets) {
      stats += p.has_trace_stats();
      TestPacketId id;
      if (testing::ParseTestPacket(p, &id)) seqs.push_back(id.seq);
    }
    EXPECT_EQ(stats, 1);
    // A file holds what its size allows, and a slice of the buffer more.
    if (f + 1 < files.size()) {
      EXPECT_GE(std::filesystem::file_size(dir_ + "/" + files[f]), 128u * 1024);
      EXPECT_LT(std::filesystem::file_size(dir_ + "/" + files[f]), 1024u * 1024);
    }
  }
  // In order across the files, each once.
  ASSERT_EQ(seqs.size(), kPackets);
  for (uint32_t i = 0; i < kPackets; i++) ASSERT_EQ(seqs[i], i);
  // The files' stats (each of its own period) add up to the session's.
  EXPECT_EQ(chunks_written, whole->buffer_stats(0).chunks_written());
}

TEST_F(TracingServiceRotationTest, KeepLeavesTheNewestFiles) {
  ASSERT_TRUE(Enable(StreamingConfig(), Rotating(128 * 1024, 0, 3)).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer_.WaitForStart(&started));
  auto writer = producer_.arbiter()->CreateTraceWriter(started.config.target_buffer(), BufferExhaustedPolicy::kStall);
  WritePackets(writer.get(), 0, kPackets);
  writer.reset();
  StopAndWait();
  ASSERT_GE(finished_.size(), 8u);
  EXPECT_EQ(Files(), std::vector<std::string>(finished_.end() - 3, finished_.end()));
}

TEST_F(TracingServiceRotationTest, CutsOnTimeWhenTheFileSpansItsDuration) {
  ASSERT_TRUE(Enable(StreamingConfig(), Rotating(0, 1000)).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer_.WaitForStart(&started));
  auto writer = producer_.arbiter()->CreateTraceWriter(started.config.target_buffer(), BufferExhaustedPolicy::kStall);
  // A batch, then the next only once a file was cut after it.
  for (uint32_t batch = 0; batch < 3; batch++) {
    WritePackets(writer.get(), batch * 100, batch * 100 + 100);
    const size_t before = finished_.size();
    ASSERT_TRUE(testing::WaitUntil([&] {
      consumer_->WaitForTracingDisabled(100);
      TakeFinished();
      return finished_.size() > before;
    }));
  }
  // Asked at each cut while recording to write its state again.
  EXPECT_GE(producer_.clears, 3);
  writer.reset();
  StopAndWait();
  EXPECT_GE(finished_.size(), 4u);
  std::multiset<uint32_t> seqs;
  for (const std::string& name : Files()) {
    for (const TracePacket& p : Packets(name)) {
      TestPacketId id;
      if (testing::ParseTestPacket(p, &id)) seqs.insert(id.seq);
    }
  }
  EXPECT_EQ(seqs.size(), 300u);
  EXPECT_EQ(std::set<uint32_t>(seqs.begin(), seqs.end()).size(), 300u) << "a packet in two files";
}

TEST_F(TracingServiceRotationTest, RefusedWithoutWriteIntoFileOrADirectory) {
  auto in_memory = MakeConfig(1024, "test.ds");
  Status st = Enable(in_memory, Rotating(1 << 20));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("write_into_file"), std::string::npos) << st.message();
  const std::string file = dir_ + "/not-a-dir";
  ScopedFd fd(open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  st = consumer_->EnableTracing(StreamingConfig(), fd.get(), Rotating(1 << 20));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("directory"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace sluice
