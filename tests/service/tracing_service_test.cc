// Tests of service/tracing_service.h in one process: sessions, the commit
// path (through the real SharedMemoryArbiter and by hand with
// SharedMemoryAbi), trusted fields, flushes, stops, file writing and the
// handling of misbehaving producers.
#include "service/tracing_service.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <future>
#include <iterator>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "perfetto/common/trace_stats.pb.h"
#include "service/trace_buffer.h"
#include "service/trace_file_writer.h"
#include "service/trusted_packet.h"
#include "shm/shm_abi.h"
#include "tests/service/service_test_util.h"

namespace sluice {
namespace {

using perfetto::protos::TracePacket;
using perfetto::protos::TraceStats;
using testing::MakeConfig;
using testing::ReadAllPackets;
using testing::TestPacketId;
using testing::TestProducer;

// The whole of the file at `path` ("" if it cannot be read).
std::string ReadWholeFile(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class TracingServiceTest : public ::testing::Test {
 protected:
  void StartService(TracingServiceOptions options = {}) {
    loop_thread_ = std::make_unique<EventLoopThread>();
    service_ = std::make_unique<TracingService>(loop_thread_->loop(), std::move(options));
  }
  void TearDown() override {
    service_.reset();
    loop_thread_.reset();
  }

  // Connects `producer` with one data source named `ds`.
  void ConnectProducer(TestProducer* producer, const std::string& name = "test-producer",
                       const std::string& ds = "test.ds", ProducerOptions options = {},
                       ArbiterOptions arbiter_options = {}) {
    options.name = name;
    auto conn = service_->ConnectProducer(producer, options);
    ASSERT_TRUE(conn.ok()) << conn.status().message();
    producer->Attach(std::move(conn.value()), arbiter_options);
    DataSourceDescriptor d;
    d.name = ds;
    d.will_notify_on_stop = true;
    d.handles_incremental_state_clear = true;
    producer->connection()->RegisterDataSource(d);
  }

  // Starts the service with `producer` and a consumer whose session has one
  // 4 MiB buffer, and waits until the producer's data source started.
  void StartSession(TestProducer* producer, std::unique_ptr<ConsumerEndpoint>* consumer,
                    TestProducer::Started* started) {
    StartService();
    ConnectProducer(producer);
    *consumer = service_->ConnectConsumer();
    ASSERT_TRUE((*consumer)->EnableTracing(MakeConfig(4096, "test.ds")).ok());
    ASSERT_TRUE(producer->WaitForStart(started));
  }

  static void StopAndWait(ConsumerEndpoint* consumer, std::string* error = nullptr) {
    ASSERT_TRUE(consumer->DisableTracing().ok());
    std::string e;
    ASSERT_TRUE(consumer->WaitForTracingDisabled(20000, &e));
    if (error) *error = e;
  }

  std::unique_ptr<EventLoopThread> loop_thread_;
  std::unique_ptr<TracingService> service_;
};

struct TraceSummary {
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> seqs;  // (producer, writer)
  std::map<std::pair<uint32_t, uint32_t>, std::set<uint32_t>> sequence_ids;
  std::set<uint32_t> all_sequence_ids;
  int config_packets = 0;
  int extension_descriptors = 0;
  int clock_snapshots = 0;
  int stats_packets = 0;
  int test_packets = 0;
  TraceStats stats;
  bool stats_last = false;
};

TraceSummary Summarize(const std::vector<TracePacket>& packets) {
  TraceSummary s;
  for (size_t i = 0; i < packets.size(); i++) {
    const TracePacket& p = packets[i];
    if (p.has_trusted_packet_sequence_id()) s.all_sequence_ids.insert(p.trusted_packet_sequence_id());
    if (p.has_trace_config()) s.config_packets++;
    if (p.has_extension_descriptor()) s.extension_descriptors++;
    if (p.has_clock_snapshot()) s.clock_snapshots++;
    if (p.has_trace_stats()) {
      s.stats_packets++;
      s.stats = p.trace_stats();
      s.stats_last = i + 1 == packets.size();
    }
    TestPacketId id;
    if (testing::ParseTestPacket(p, &id)) {
      s.test_packets++;
      s.seqs[{id.producer, id.writer}].push_back(id.seq);
      s.sequence_ids[{id.producer, id.writer}].insert(p.trusted_packet_sequence_id());
    }
  }
  return s;
}

TEST_F(TracingServiceTest, InProcessEndToEnd) {
  TestProducer producer;
  std::unique_ptr<ConsumerEndpoint> consumer;
  TestProducer::Started started;
  ASSERT_NO_FATAL_FAILURE(StartSession(&producer, &consumer, &started));
  EXPECT_EQ(started.config.name(), "test.ds");
  constexpr uint32_t kWriters = 3, kPackets = 1000;
  {
    std::vector<std::unique_ptr<TraceWriter>> writers;
    for (uint32_t w = 0; w < kWriters; w++)
      writers.push_back(producer.arbiter()->CreateTraceWriter(started.config.target_buffer()));
    for (uint32_t seq = 0; seq < kPackets; seq++)
      for (uint32_t w = 0; w < kWriters; w++)
        testing::WriteTestPacket(writers[w].get(), {1, w, seq});
    for (auto& w : writers) w->Flush();
  }
  std::string error;
  StopAndWait(consumer.get(), &error);
  EXPECT_EQ(error, "");

  std::vector<TracePacket> packets = ReadAllPackets(consumer.get());
  ASSERT_FALSE(packets.empty());
  EXPECT_TRUE(packets[0].has_trace_config());
  EXPECT_EQ(packets[0].trace_config().buffers(0).size_kb(), 4096u);
  TraceSummary s = Summarize(packets);
  EXPECT_EQ(s.config_packets, 1);
  // Right after the config: the descriptors of sluice's own fields, once.
  EXPECT_TRUE(packets[1].has_extension_descriptor());
  EXPECT_EQ(s.extension_descriptors, 1);
  EXPECT_EQ(s.clock_snapshots, 2);
  EXPECT_EQ(s.stats_packets, 1);
  EXPECT_TRUE(s.stats_last);
  ASSERT_EQ(s.seqs.size(), kWriters);
  std::set<uint32_t> writer_sequence_ids;
  for (auto& [key, seqs] : s.seqs) {
    ASSERT_EQ(seqs.size(), kPackets) << "writer " << key.second;
    for (uint32_t i = 0; i < kPackets; i++) ASSERT_EQ(seqs[i], i) << "writer " << key.second;
    ASSERT_EQ(s.sequence_ids[key].size(), 1u);
    uint32_t id = *s.sequence_ids[key].begin();
    EXPECT_GE(id, 2u);
    writer_sequence_ids.insert(id);
  }
  EXPECT_EQ(writer_sequence_ids.size(), kWriters) << "one trusted sequence id per writer";
  for (const TracePacket& p : packets) {
    ASSERT_TRUE(p.has_trusted_uid());
    EXPECT_EQ(p.trusted_uid(), static_cast<int32_t>(getuid()));
    EXPECT_EQ(p.trusted_pid(), static_cast<int32_t>(getpid()));
    if (p.has_trace_stats() || p.has_clock_snapshot() || p.has_trace_config()) {
      EXPECT_EQ(p.trusted_packet_sequence_id(), 1u);
    }
  }
  // Clock snapshots carry the clocks the design asks for.
  for (const TracePacket& p : packets) {
    if (!p.has_clock_snapshot()) continue;
    std::set<uint32_t> ids;
    for (const auto& c : p.clock_snapshot().clocks()) ids.insert(c.clock_id());
    for (uint32_t want : {1u, 3u, 5u, 6u}) EXPECT_TRUE(ids.count(want)) << "clock " << want;
  }
  const TraceStats& st = s.stats;
  ASSERT_EQ(st.buffer_stats_size(), 1);
  EXPECT_GE(st.buffer_stats(0).chunks_written(), kWriters * kPackets / testing::kTestPacketsPerChunk);
  EXPECT_EQ(st.buffer_stats(0).chunks_overwritten(), 0u);
  EXPECT_EQ(st.buffer_stats(0).abi_violations(), 0u);
  EXPECT_EQ(st.producers_connected(), 1u);
  EXPECT_EQ(st.producers_seen(), 1u);
  EXPECT_EQ(st.data_sources_registered(), 1u);
  EXPECT_EQ(st.tracing_sessions(), 1u);
  EXPECT_EQ(st.total_buffers(), 1u);
  EXPECT_GE(st.flushes_requested(), 1u);
  EXPECT_EQ(st.flushes_failed(), 0u);
  EXPECT_EQ(st.final_flush_outcome(), TraceStats::FINAL_FLUSH_SUCCEEDED);
  EXPECT_EQ(st.invalid_packets(), 0u);
  producer.Detach();
}

// A writer's id is free again once the writer is gone. The next writer with
// that id continues its chunk ids (shm/smb_trace_writer.h): starting again
// at 0, its chunks would be late ones of the sequence already read past, and
// the buffer would drop them.
TEST_F(TracingServiceTest, AWriterIdUsedAgainKeepsEveryPacketOfBothWriters) {
  TestProducer producer;
  std::unique_ptr<ConsumerEndpoint> consumer;
  TestProducer::Started started;
  ASSERT_NO_FATAL_FAILURE(StartSession(&producer, &consumer, &started));
  constexpr uint32_t kPackets = 100;
  uint16_t first_id = 0;
  {
    auto writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer());
    first_id = writer->writer_id();
    for (uint32_t seq = 0; seq < kPackets; seq++) testing::WriteTestPacket(writer.get(), {1, 0, seq});
    writer->Flush();
  }
  ASSERT_TRUE(consumer->Flush(10000).ok());
  std::vector<TracePacket> packets = ReadAllPackets(consumer.get());  // Reads past the first writer's chunks.
  {
    auto writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer());
    ASSERT_EQ(writer->writer_id(), first_id) << "the test needs the id used again";
    for (uint32_t seq = 0; seq < kPackets; seq++) testing::WriteTestPacket(writer.get(), {1, 1, seq});
    writer->Flush();
  }
  std::string error;
  StopAndWait(consumer.get(), &error);
  EXPECT_EQ(error, "");
  for (TracePacket& p : ReadAllPackets(consumer.get())) packets.push_back(std::move(p));
  TraceSummary s = Summarize(packets);
  EXPECT_EQ((s.seqs[{1, 0}].size()), kPackets);
  EXPECT_EQ((s.seqs[{1, 1}].size()), kPackets);
  EXPECT_EQ(s.stats.buffer_stats(0).chunks_discarded(), 0u);
  producer.Detach();
}

TEST_F(TracingServiceTest, ForgedTrustedFieldsAreReplaced) {
  StartService();
  TestProducer producer;
  ConnectProducer(&producer);
  auto consumer = service_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(MakeConfig(1024, "test.ds")).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  {
    auto writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer());
    for (int i = 0; i < 10; i++) {
      auto packet = writer->NewTracePacket();
      packet->WriteVarInt(kTrustedUidField, 4242);
      packet->WriteVarInt(kTrustedPacketSequenceIdField, 1);  // The service's own.
      packet->WriteVarInt(kTrustedPidField, 1);
      packet->WriteVarInt(8, 1000 + i);  // timestamp
      packet->WriteVarInt(kTrustedPidField, 2);
    }
    writer->Flush();
  }
  StopAndWait(consumer.get());
  int seen = 0;
  for (const TracePacket& p : ReadAllPackets(consumer.get())) {
    if (!p.has_timestamp() || p.timestamp() < 1000 || p.timestamp() >= 1010) continue;
    seen++;
    EXPECT_EQ(p.trusted_uid(), static_cast<int32_t>(getuid()));
    EXPECT_EQ(p.trusted_pid(), static_cast<int32_t>(getpid()));
    EXPECT_GE(p.trusted_packet_sequence_id(), 2u);
    EXPECT_EQ(p.GetReflection()->GetUnknownFields(p).field_count(), 0);
  }
  EXPECT_EQ(seen, 10);
  producer.Detach();
}

// Writes one chunk by hand with SharedMemoryAbi: the service must take it
// exactly as the arbiter's chunks.
void WriteChunkByHand(SharedMemoryAbi* abi, uint32_t page, uint16_t writer_id, uint32_t chunk_id,
                      const std::vector<std::string>& packets) {
  ASSERT_TRUE(abi->TryPartitionPage(page, PageLayout::kDiv1));
  uint8_t* chunk = abi->chunk_begin(page, PageLayout::kDiv1, 0);
  ChunkHeader h;
  h.chunk_id = chunk_id;
  h.writer_id = writer_id;
  h.packets = ChunkHeader::PackPackets(static_cast<uint16_t>(packets.size()), 0);
  memcpy(chunk, &h, sizeof(h));
  uint8_t* p = chunk + sizeof(h);
  for (const std::string& packet : packets) {
    ProtoWriter::WriteRedundantVarInt(static_cast<uint32_t>(packet.size()), p);
    memcpy(p + 4, packet.data(), packet.size());
    p += 4 + packet.size();
  }
  abi->MarkChunkComplete(page, 0);
}

std::string TimestampPacket(uint64_t ts) {
  TracePacket p;
  p.set_timestamp(ts);
  return p.SerializeAsString();
}

TEST_F(TracingServiceTest, ChunksWrittenWithTheAbiDirectly) {
  StartService();
  TestProducer producer;
  auto conn = service_->ConnectProducer(&producer, ProducerOptions{"raw", 64 * 1024, 4096});
  ASSERT_TRUE(conn.ok());
  std::unique_ptr<ProducerEndpoint> c = std::move(conn.value());
  EXPECT_EQ(c->shm_size(), 64u * 1024);
  EXPECT_EQ(c->shm_page_size(), 4096u);
  c->RegisterDataSource(DataSourceDescriptor{"test.ds"});
  auto consumer = service_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(MakeConfig(256, "test.ds")).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  const uint32_t buffer = started.config.target_buffer();

  SharedMemoryAbi abi(c->shm_start(), c->shm_size(), c->shm_page_size());
  c->commit_data_sink()->RegisterTraceWriter(7, buffer);
  WriteChunkByHand(&abi, 0, 7, 0, {TimestampPacket(100), TimestampPacket(101)});
  WriteChunkByHand(&abi, 1, 7, 1, {TimestampPacket(102)});
  CommitDataRequest req;
  req.chunks_to_move = {ChunkToMove{0, 0, buffer}, ChunkToMove{1, 0, buffer}};
  c->commit_data_sink()->CommitData(req);
  // The service freed the chunks: the pages are unpartitioned again.
  EXPECT_EQ(abi.LoadHeaderRelaxed(0), 0u);
  EXPECT_EQ(abi.LoadHeaderRelaxed(1), 0u);

  StopAndWait(consumer.get());
  std::vector<uint64_t> ts;
  for (const TracePacket& p : ReadAllPackets(consumer.get()))
    if (p.has_timestamp() && p.timestamp() >= 100 && p.timestamp() < 200) ts.push_back(p.timestamp());
  EXPECT_EQ(ts, (std::vector<uint64_t>{100, 101, 102}));
  EXPECT_EQ(service_->GetServiceStats().abi_violations, 0u);
  c.reset();
}

TEST_F(TracingServiceTest, BadCommitsAreCountedAndTheProducerIsDropped) {
  TracingServiceOptions options;
  options.abi_violations_before_disconnect = 10;
  StartService(options);
  TestProducer producer;
  auto conn = service_->ConnectProducer(&producer, ProducerOptions{"bad", 64 * 1024, 4096});
  ASSERT_TRUE(conn.ok());
  std::unique_ptr<ProducerEndpoint> c = std::move(conn.value());
  c->RegisterDataSource(DataSourceDescriptor{"test.ds"});
  auto consumer = service_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(MakeConfig(256, "test.ds")).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  const uint32_t buffer = started.config.target_buffer();
  SharedMemoryAbi abi(c->shm_start(), c->shm_size(), c->shm_page_size());

  CommitDataRequest req;
  // Out of range page and chunk indices.
  req.chunks_to_move = {ChunkToMove{1000, 0, buffer}, ChunkToMove{0, 13, buffer}};
  c->commit_data_sink()->CommitData(req);
  EXPECT_EQ(service_->GetServiceStats().abi_violations, 2u);
  // A chunk that is not Complete: not a violation (may be a late commit).
  ASSERT_TRUE(abi.TryPartitionPage(2, PageLayout::kDiv1));  // Chunk 0 BeingWritten.
  req.chunks_to_move = {ChunkToMove{2, 0, buffer}};
  c->commit_data_sink()->CommitData(req);
  EXPECT_EQ(service_->GetServiceStats().abi_violations, 2u);
  EXPECT_EQ(service_->GetServiceStats().chunks_not_complete, 1u);
  // A complete chunk whose packet sizes overrun it.
  ASSERT_TRUE(abi.TryPartitionPage(3, PageLayout::kDiv1));
  uint8_t* chunk = abi.chunk_begin(3, PageLayout::kDiv1, 0);
  ChunkHeader h{5, 3, ChunkHeader::PackPackets(2, 0)};
  memcpy(chunk, &h, sizeof(h));
  ProtoWriter::WriteRedundantVarInt(100000, chunk + sizeof(h));
  abi.MarkChunkComplete(3, 0);
  req.chunks_to_move = {ChunkToMove{3, 0, buffer}};
  c->commit_data_sink()->CommitData(req);
  EXPECT_EQ(service_->GetServiceStats().abi_violations, 3u);
  EXPECT_EQ(abi.LoadHeaderRelaxed(3), 0u) << "a bad chunk is freed, not kept";
  // A buffer this producer has no data source in.
  ASSERT_TRUE(abi.TryPartitionPage(4, PageLayout::kDiv1));
  abi.MarkChunkComplete(4, 0);
  req.chunks_to_move = {ChunkToMove{4, 0, buffer + 100}};
  c->commit_data_sink()->CommitData(req);
  ServiceStats ss = service_->GetServiceStats();
  EXPECT_EQ(ss.abi_violations, 4u);
  EXPECT_GE(ss.chunks_discarded, 2u);
  // Patches for a bad writer id.
  ChunkPatch patch;
  patch.target_buffer = buffer;
  patch.writer_id = 0;
  req = CommitDataRequest();
  req.chunks_to_patch = {patch};
  c->commit_data_sink()->CommitData(req);
  EXPECT_EQ(service_->GetServiceStats().patches_discarded, 1u);
  // More of the same until the threshold disconnects it.
  req = CommitDataRequest();
  for (int i = 0; i < 20; i++) req.chunks_to_move.push_back(ChunkToMove{9999, 0, buffer});
  c->commit_data_sink()->CommitData(req);
  EXPECT_TRUE(producer.WaitFor([](TestProducer& p) { return p.disconnects == 1; }));
  EXPECT_NE(producer.disconnect_reason.find("invalid"), std::string::npos);
  ss = service_->GetServiceStats();
  EXPECT_EQ(ss.producers_disconnected_for_faults, 1u);
  EXPECT_EQ(ss.abi_violations, 10u) << "nothing is counted after the disconnect";
  // The session still works.
  StopAndWait(consumer.get());
  auto stats = consumer->GetTraceStats();
  ASSERT_TRUE(stats.ok());
  EXPECT_GE(stats->buffer_stats(0).abi_violations(), 1u);
  c.reset();
}

TEST_F(TracingServiceTest, FlushTimeoutIsCountedAndTheTraceIsStillWritten) {
  StartService();
  TestProducer producer;
  ConnectProducer(&producer);
  producer.set_answer_flushes(false);
  auto consumer = service_->ConnectConsumer();
  auto config = MakeConfig(1024, "test.ds");
  config.set_flush_timeout_ms(200);
  ASSERT_TRUE(consumer->EnableTracing(config).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  {
    auto writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer());
    for (uint32_t i = 0; i < 100; i++) testing::WriteTestPacket(writer.get(), {1, 0, i});
    writer->Flush();
  }
  auto flushed = consumer->Flush(100);
  ASSERT_TRUE(flushed.ok());
  EXPECT_FALSE(flushed.value());
  StopAndWait(consumer.get());
  TraceSummary s = Summarize(ReadAllPackets(consumer.get()));
  EXPECT_EQ(s.test_packets, 100);
  EXPECT_EQ(s.stats.flushes_failed(), 2u);
  EXPECT_EQ(s.stats.flushes_succeeded(), 0u);
  EXPECT_EQ(s.stats.final_flush_outcome(), TraceStats::FINAL_FLUSH_FAILED);
  producer.Detach();
}

TEST_F(TracingServiceTest, DeadProducersCompleteChunksAreScraped) {
  StartService();
  TestProducer producer;
  auto conn = service_->ConnectProducer(&producer, ProducerOptions{"dies", 64 * 1024, 4096});
  ASSERT_TRUE(conn.ok());
  std::unique_ptr<ProducerEndpoint> c = std::move(conn.value());
  c->RegisterDataSource(DataSourceDescriptor{"test.ds"});
  auto consumer = service_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(MakeConfig(256, "test.ds")).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  SharedMemoryAbi abi(c->shm_start(), c->shm_size(), c->shm_page_size());
  c->commit_data_sink()->RegisterTraceWriter(3, started.config.target_buffer());
  // Completed, never committed; then a chunk still being written.
  WriteChunkByHand(&abi, 0, 3, 0, {TimestampPacket(500), TimestampPacket(501)});
  WriteChunkByHand(&abi, 1, 3, 1, {TimestampPacket(502)});
  ASSERT_TRUE(abi.TryPartitionPage(2, PageLayout::kDiv1));  // BeingWritten: lost.
  // Past pages never written (holes, which the scrape does not read).
  WriteChunkByHand(&abi, 12, 3, 2, {TimestampPacket(503)});
  c.reset();  // The producer "dies".
  StopAndWait(consumer.get());
  std::vector<uint64_t> ts;
  for (const TracePacket& p : ReadAllPackets(consumer.get()))
    if (p.has_timestamp() && p.timestamp() >= 500 && p.timestamp() < 600) ts.push_back(p.timestamp());
  EXPECT_EQ(ts, (std::vector<uint64_t>{500, 501, 502, 503}));
  EXPECT_EQ(service_->GetServiceStats().chunks_scraped, 3u);
}

TEST_F(TracingServiceTest, WriteIntoFileStreamsAndEndsWithStats) {
  StartService();
  TestProducer producer;
  ConnectProducer(&producer);
  char path[] = "/tmp/sluice-service-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  auto consumer = service_->ConnectConsumer();
  auto config = MakeConfig(1024, "test.ds");
  config.set_write_into_file(true);
  config.set_file_write_period_ms(100);
  ASSERT_TRUE(consumer->EnableTracing(config, fd).ok());
  close(fd);
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  auto writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer());
  for (uint32_t i = 0; i < 200; i++) testing::WriteTestPacket(writer.get(), {1, 0, i});
  writer->Flush();
  // The file grows while tracing, and is a valid trace each time we look.
  for (int i = 0; i < 100; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    struct stat st;
    ASSERT_EQ(stat(path, &st), 0);
    if (st.st_size > 200 * 500) break;
  }
  const std::string mid = ReadWholeFile(path);
  bool ok = false;
  TraceSummary mid_summary = Summarize(testing::ParseTraceBytes(mid, &ok));
  EXPECT_TRUE(ok);
  EXPECT_EQ(mid_summary.test_packets, 200);
  EXPECT_EQ(mid_summary.stats_packets, 0);
  // Not allowed: the file is the output.
  EXPECT_FALSE(consumer->ReadBuffers([](std::string_view) {}).ok());
  for (uint32_t i = 200; i < 300; i++) testing::WriteTestPacket(writer.get(), {1, 0, i});
  writer.reset();
  StopAndWait(consumer.get());
  const std::string all = ReadWholeFile(path);
  unlink(path);
  TraceSummary s = Summarize(testing::ParseTraceBytes(all, &ok));
  EXPECT_TRUE(ok);
  EXPECT_EQ(s.test_packets, 300);
  EXPECT_EQ(s.config_packets, 1);
  EXPECT_EQ(s.clock_snapshots, 2);
  EXPECT_EQ(s.stats_packets, 1);
  EXPECT_TRUE(s.stats_last);
  producer.Detach();
}

// A producer that commits more than half the buffer's first lap before the
// write period ends gets its data written at once: the lap stays at its
// first size (no page of the rest of the ring is faulted in), and nothing
// waits for the period (an hour here).
TEST_F(TracingServiceTest, AHalfFullLapIsWrittenIntoTheFileBeforeItsPeriod) {
  StartService();
  TestProducer producer;
  ConnectProducer(&producer);
  char path[] = "/tmp/sluice-service-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  auto consumer = service_->ConnectConsumer();
  auto config = MakeConfig(64 * 1024, "test.ds");
  config.set_write_into_file(true);
  config.set_file_write_period_ms(3600 * 1000);
  ASSERT_TRUE(consumer->EnableTracing(config, fd).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  // Four first laps' worth, from a writer that waits for room in its SMB
  // (it writes much faster than the service copies).
  const uint32_t packets = static_cast<uint32_t>(4 * TraceBuffer::kFirstLapBytes / testing::kTestPacketBytes);
  auto writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer(), BufferExhaustedPolicy::kStall);
  // In steps of three eighths of a lap, each once the file holds all but
  // half a lap (give or take the service's fields the file adds to each
  // packet, under a sixteenth): the lap never needs to hold more than it
  // can, however late the service thread runs, and every other step or so
  // makes it half full.
  const uint32_t step = static_cast<uint32_t>(TraceBuffer::kFirstLapBytes * 3 / 8 / testing::kTestPacketBytes);
  struct stat st = {};
  for (uint32_t i = 0; i < packets;) {
    for (const uint32_t end = std::min(packets, i + step); i < end; i++)
      testing::WriteTestPacket(writer.get(), {1, 0, i});
    writer->Flush();
    const off_t expected = static_cast<off_t>(i * testing::kTestPacketBytes - TraceBuffer::kFirstLapBytes / 2);
    ASSERT_TRUE(testing::WaitUntil([&] { return fstat(fd, &st) == 0 && st.st_size >= expected; }))
        << st.st_size << " bytes in the file after " << i << " packets, " << expected << " expected";
  }
  // The lap did not grow (4 laps went through it).
  EXPECT_EQ(service_->LongestLapForTesting(), TraceBuffer::kFirstLapBytes);
  close(fd);
  writer.reset();
  StopAndWait(consumer.get());
  const std::string all = ReadWholeFile(path);
  unlink(path);
  bool ok = false;
  TraceSummary summary = Summarize(testing::ParseTraceBytes(all, &ok));
  EXPECT_TRUE(ok);
  EXPECT_EQ(summary.test_packets, static_cast<int>(packets));
  producer.Detach();
}

TEST_F(TracingServiceTest, MaxFileSizeStopsTheSession) {
  StartService();
  TestProducer producer;
  ConnectProducer(&producer);
  char path[] = "/tmp/sluice-service-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  auto consumer = service_->ConnectConsumer();
  auto config = MakeConfig(4096, "test.ds");
  config.set_write_into_file(true);
  config.set_file_write_period_ms(100);
  config.set_max_file_size_bytes(256 * 1024);
  ASSERT_TRUE(consumer->EnableTracing(config, fd).ok());
  close(fd);
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  {
    auto writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer());
    for (uint32_t i = 0; i < 2000; i++) testing::WriteTestPacket(writer.get(), {1, 0, i});
    writer->Flush();
  }
  std::string error;
  ASSERT_TRUE(consumer->WaitForTracingDisabled(20000, &error)) << "the cap stops the session";
  EXPECT_EQ(error, "");
  struct stat st;
  ASSERT_EQ(stat(path, &st), 0);
  EXPECT_LE(st.st_size, 256 * 1024);
  const std::string all = ReadWholeFile(path);
  unlink(path);
  bool ok = false;
  TraceSummary s = Summarize(testing::ParseTraceBytes(all, &ok));
  EXPECT_TRUE(ok);
  EXPECT_GT(s.test_packets, 300);
  EXPECT_LT(s.test_packets, 2000);
  EXPECT_EQ(s.stats_packets, 1) << "the trailer has room under the cap";
  producer.Detach();
}

// The disk fills (/dev/full: every write fails with ENOSPC): the session
// stops on its own, and its error is the file writer's account, counting
// every packet the file misses, the final read's included.
TEST_F(TracingServiceTest, WriteErrorStopsTheSessionAndSaysWhatWasLost) {
  StartService();
  TestProducer producer;
  ConnectProducer(&producer);
  int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  auto consumer = service_->ConnectConsumer();
  auto config = MakeConfig(1024, "test.ds");
  config.set_write_into_file(true);
  config.set_file_write_period_ms(100);
  ASSERT_TRUE(consumer->EnableTracing(config, fd).ok());
  close(fd);
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  {
    auto writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer());
    for (uint32_t i = 0; i < 200; i++) testing::WriteTestPacket(writer.get(), {1, 0, i});
    writer->Flush();
  }
  std::string error;
  ASSERT_TRUE(consumer->WaitForTracingDisabled(20000, &error)) << "a write error stops the session";
  const std::string head = std::string(kTraceFileErrorPrefix) +
                           "no space left on device after 0 bytes (0 packets written, the file is "
                           "valid up to there); ";
  ASSERT_EQ(error.rfind(head, 0), 0u) << error;
  // At least the config, both clock snapshots and TraceStats (the test
  // packets too when they reached the buffer before the first write: that
  // write happens at start, so whether they did is up to the scheduler).
  const uint64_t lost = std::stoull(error.substr(head.size()));
  EXPECT_GE(lost, 4u) << error;
  EXPECT_NE(error.find(" packets ("), std::string::npos) << error;
  EXPECT_NE(error.find("bytes) after that were not written; free space there or write the trace "
                       "elsewhere"),
            std::string::npos)
      << error;
  producer.Detach();
}

TEST_F(TracingServiceTest, DurationStopsTheSession) {
  StartService();
  TestProducer producer;
  ConnectProducer(&producer);
  auto consumer = service_->ConnectConsumer();
  auto config = MakeConfig(256, "test.ds");
  config.set_duration_ms(100);
  ASSERT_TRUE(consumer->EnableTracing(config).ok());
  std::string error;
  EXPECT_TRUE(consumer->WaitForTracingDisabled(10000, &error));
  EXPECT_TRUE(producer.WaitFor([](TestProducer& p) { return p.stops == 1; }));
  producer.Detach();
}

// RssAnon of this process, in KiB, from /proc/self/status.
uint64_t AnonResidentKb() {
  std::ifstream status("/proc/self/status");
  std::string key;
  uint64_t kb = 0;
  while (status >> key) {
    if (key == "RssAnon:") {
      status >> kb;
      return kb;
    }
    status.ignore(1 << 20, '\n');
  }
  return 0;
}

// The first lap of a new session's buffer is resident before the session
// traces (so its faults are not paid while the workload runs), and only the
// first lap: the rest of a 64 MiB ring stays unmapped until the lap grows.
TEST_F(TracingServiceTest, ANewSessionsFirstLapIsFaultedInAtOnce) {
  StartService();
  auto consumer = service_->ConnectConsumer();
  const uint64_t before_kb = AnonResidentKb();
  ASSERT_TRUE(consumer->EnableTracing(MakeConfig(64 * 1024, "test.ds")).ok());
  const uint64_t after_kb = AnonResidentKb();
  // Three quarters: other memory of the process may be given back
  // meanwhile (under TSan 24 KiB was); without the fault-in it grew ~0.
  EXPECT_GE(after_kb, before_kb + TraceBuffer::kFirstLapBytes / 1024 * 3 / 4);
  EXPECT_LT(after_kb, before_kb + 32 * 1024);
  StopAndWait(consumer.get());
}

TEST_F(TracingServiceTest, LateDataSourceJoinsARunningSession) {
  StartService();
  auto consumer = service_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(MakeConfig(256, "test.ds")).ok());
  TestProducer producer;
  ConnectProducer(&producer);
  TestProducer::Started started;
  EXPECT_TRUE(producer.WaitForStart(&started));
  StopAndWait(consumer.get());
  producer.Detach();
}

TEST_F(TracingServiceTest, ProducerNameFilter) {
  StartService();
  TestProducer a, b;
  ConnectProducer(&a, "alpha");
  ConnectProducer(&b, "beta");
  auto consumer = service_->ConnectConsumer();
  auto config = MakeConfig(256, "test.ds");
  config.mutable_data_sources(0)->add_producer_name_filter("beta");
  ASSERT_TRUE(consumer->EnableTracing(config).ok());
  TestProducer::Started started;
  EXPECT_TRUE(b.WaitForStart(&started));
  EXPECT_FALSE(a.WaitForStart(&started, 200));
  StopAndWait(consumer.get());
  ASSERT_TRUE(consumer->FreeBuffers().ok());
  // The same by regex.
  auto by_regex = MakeConfig(256, "test.ds");
  by_regex.mutable_data_sources(0)->add_producer_name_regex_filter("al.*");
  ASSERT_TRUE(consumer->EnableTracing(by_regex).ok());
  EXPECT_TRUE(a.WaitForStart(&started));
  EXPECT_FALSE(b.WaitForStart(&started, 200));
  StopAndWait(consumer.get());
  ASSERT_TRUE(consumer->FreeBuffers().ok());
  auto bad_regex = MakeConfig(256, "test.ds");
  bad_regex.mutable_data_sources(0)->add_producer_name_regex_filter("(");
  EXPECT_FALSE(consumer->EnableTracing(bad_regex).ok());
  a.Detach();
  b.Detach();
}

TEST_F(TracingServiceTest, PeriodicFlushAndIncrementalStateClear) {
  StartService();
  TestProducer producer;
  ConnectProducer(&producer);
  auto consumer = service_->ConnectConsumer();
  auto config = MakeConfig(256, "test.ds");
  config.set_flush_period_ms(30);
  config.mutable_incremental_state_config()->set_clear_period_ms(30);
  ASSERT_TRUE(consumer->EnableTracing(config).ok());
  EXPECT_TRUE(producer.WaitFor([](TestProducer& p) { return p.flushes >= 3 && p.clears >= 3; }));
  StopAndWait(consumer.get());
  auto stats = consumer->GetTraceStats();
  ASSERT_TRUE(stats.ok());
  EXPECT_GE(stats->flushes_succeeded(), 3u);
  producer.Detach();
}

// SessionOptions.rest_flush_period_ms: a session that takes in nothing
// flushes ever less often, the period doubling from the configured one up to
// the ceiling (service/rest_flush_period.h has the rule; here the timer
// follows it). Only lower bounds, and each from the session's start: a
// timer never fires early, and the next is set when one fires, so flush k
// comes at least the sum of the periods before it after the start, however
// busy the machine. (The gap between two flushes' arrivals has no lower
// bound: the first may arrive late and the second on time.)
TEST_F(TracingServiceTest, PeriodicFlushBacksOffAtRest) {
  StartService();
  TestProducer producer;
  ConnectProducer(&producer);
  std::mutex mu;
  std::vector<std::chrono::steady_clock::time_point> flush_times;
  producer.set_on_flush([&] {
    std::lock_guard<std::mutex> lock(mu);
    flush_times.push_back(std::chrono::steady_clock::now());
  });
  auto consumer = service_->ConnectConsumer();
  auto config = MakeConfig(256, "test.ds");
  config.set_flush_period_ms(10);
  SessionOptions options;
  options.rest_flush_period_ms = 80;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(consumer->EnableTracing(config, -1, options).ok());
  EXPECT_TRUE(producer.WaitFor([](TestProducer& p) { return p.flushes >= 6; }));
  StopAndWait(consumer.get());
  // Not held while the producer detaches: on_flush takes it under the
  // producer's own lock (ThreadSanitizer: lock-order inversion).
  std::vector<std::chrono::steady_clock::time_point> times;
  {
    std::lock_guard<std::mutex> lock(mu);
    times = flush_times;
  }
  producer.Detach();
  ASSERT_GE(times.size(), 6u);
  // The periods: the configured 10 ms, then doubling to the 80 ms ceiling.
  const int period_ms[] = {10, 20, 40, 80, 80, 80};
  int at_least_ms = 0;
  for (size_t k = 0; k < 6; k++) {
    at_least_ms += period_ms[k];
    EXPECT_GE(times[k] - start, std::chrono::milliseconds(at_least_ms)) << "flush " << k;
  }
}

TEST_F(TracingServiceTest, StopWaitsForAcksUpToTheTimeout) {
  StartService();
  TestProducer producer;
  ConnectProducer(&producer);
  producer.set_ack_stops(false);
  auto consumer = service_->ConnectConsumer();
  auto config = MakeConfig(256, "test.ds");
  config.set_data_source_stop_timeout_ms(300);
  ASSERT_TRUE(consumer->EnableTracing(config).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  auto t0 = std::chrono::steady_clock::now();
  StopAndWait(consumer.get());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(250));
  producer.Detach();
}

TEST_F(TracingServiceTest, DiscardPolicyCountsDiscardedChunks) {
  StartService();
  TestProducer producer;
  ConnectProducer(&producer);
  auto consumer = service_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(MakeConfig(64, "test.ds", /*discard=*/true)).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  {
    auto writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer(),
                                                         BufferExhaustedPolicy::kStall);
    for (uint32_t i = 0; i < 400; i++) testing::WriteTestPacket(writer.get(), {1, 0, i});
    writer->Flush();
  }
  StopAndWait(consumer.get());
  TraceSummary s = Summarize(ReadAllPackets(consumer.get()));
  const auto& bs = s.stats.buffer_stats(0);
  EXPECT_GT(bs.chunks_discarded(), 0u);
  // The oldest data is kept, complete.
  auto& seqs = s.seqs[std::make_pair(1u, 0u)];
  ASSERT_FALSE(seqs.empty());
  for (uint32_t i = 0; i < seqs.size(); i++) ASSERT_EQ(seqs[i], i);
  EXPECT_EQ(seqs.size() + bs.chunks_discarded() * testing::kTestPacketsPerChunk, 400u + 0u)
      << "every packet is either in the trace or in a discarded chunk (the last chunk is partial)";
  producer.Detach();
}

// A commit after an idle spell is copied out of the SMB by pread(2) of its
// memfd (TracingServiceOptions::cold_commit_after_ms; 0 here: every commit),
// for a producer in another process (a pid not ours, as sluiced sees its
// producers); the trace is the same as through the mapping.
TEST_F(TracingServiceTest, CommitsAfterAnIdleSpellAreReadByPreadIntact) {
  TracingServiceOptions options;
  options.cold_commit_after_ms = 0;
  StartService(options);
  TestProducer producer;
  PeerCredentials peer;
  peer.uid = getuid();
  peer.pid = getpid() == 1 ? 2 : 1;
  int fd = -1;
  auto conn = service_->ConnectProducer(&producer, ProducerOptions{"other-process"}, peer, &fd);
  ASSERT_TRUE(conn.ok()) << conn.status().message();
  producer.Attach(std::move(conn.value()));
  DataSourceDescriptor d;
  d.name = "test.ds";
  d.will_notify_on_stop = true;
  producer.connection()->RegisterDataSource(d);
  std::unique_ptr<ConsumerEndpoint> consumer = service_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(MakeConfig(4096, "test.ds")).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  constexpr uint32_t kPackets = 2000;
  {
    std::unique_ptr<TraceWriter> writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer());
    for (uint32_t seq = 0; seq < kPackets; seq++) testing::WriteTestPacket(writer.get(), {1, 0, seq});
    writer->Flush();
  }
  StopAndWait(consumer.get());
  TraceSummary s = Summarize(ReadAllPackets(consumer.get()));
  ASSERT_EQ(s.seqs.size(), 1u);
  const std::vector<uint32_t>& seqs = s.seqs.begin()->second;
  ASSERT_EQ(seqs.size(), kPackets);
  for (uint32_t i = 0; i < kPackets; i++) ASSERT_EQ(seqs[i], i);
  const ServiceStats stats = service_->GetServiceStats();
  EXPECT_GT(stats.chunks_read_by_pread, 0u);
  EXPECT_EQ(stats.chunks_read_by_pread, stats.chunks_moved);
  EXPECT_EQ(stats.abi_violations, 0u);
  producer.Detach();
}

// A producer in this process writes through the service's own mapping, just
// touched: never read by pread, however long since its last commit.
TEST_F(TracingServiceTest, AProducerInThisProcessIsNotReadByPread) {
  TracingServiceOptions options;
  options.cold_commit_after_ms = 0;
  StartService(options);
  TestProducer producer;
  ConnectProducer(&producer);
  std::unique_ptr<ConsumerEndpoint> consumer = service_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(MakeConfig(4096, "test.ds")).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  {
    std::unique_ptr<TraceWriter> writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer());
    for (uint32_t seq = 0; seq < 500; seq++) testing::WriteTestPacket(writer.get(), {1, 0, seq});
    writer->Flush();
  }
  StopAndWait(consumer.get());
  const ServiceStats stats = service_->GetServiceStats();
  EXPECT_GT(stats.chunks_moved, 0u);
  EXPECT_EQ(stats.chunks_read_by_pread, 0u);
}

TEST_F(TracingServiceTest, ProducerUidAllowlist) {
  TracingServiceOptions options;
  options.producer_uid_allowlist = {12345};
  StartService(options);
  TestProducer producer;
  PeerCredentials peer;
  peer.uid = 999;
  peer.pid = 1;
  int fd = -1;
  auto refused = service_->ConnectProducer(&producer, ProducerOptions{"x"}, peer, &fd);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("999"), std::string::npos);
  peer.uid = 12345;
  auto accepted = service_->ConnectProducer(&producer, ProducerOptions{"x"}, peer, &fd);
  EXPECT_TRUE(accepted.ok());
  EXPECT_GE(fd, 0);
  EXPECT_EQ(service_->GetServiceStats().producers_refused, 1u);
}

TEST_F(TracingServiceTest, ShmSizeIsClampedAndPageAligned) {
  StartService();
  TestProducer producer;
  struct Case {
    uint32_t size_hint, page_hint, want_size, want_page;
  } cases[] = {
      {0, 0, 256 * 1024, 4096},                    // defaults
      {1, 1, 64 * 1024, 4096},                     // below the minimum
      {1u << 30, 1u << 20, 32u << 20, 65536},      // above the maxima
      {100000, 8192, 106496, 8192},                // rounded up to pages
  };
  for (const Case& c : cases) {
    auto conn = service_->ConnectProducer(&producer, ProducerOptions{"p", c.size_hint, c.page_hint});
    ASSERT_TRUE(conn.ok());
    EXPECT_EQ(conn.value()->shm_size(), c.want_size);
    EXPECT_EQ(conn.value()->shm_page_size(), c.want_page);
  }
}

TEST_F(TracingServiceTest, SessionsAreIsolated) {
  StartService();
  TestProducer a;
  ConnectProducer(&a, "a", "a.ds");
  TestProducer b;
  ConnectProducer(&b, "b", "b.ds");
  auto consumer_a = service_->ConnectConsumer();
  auto consumer_b = service_->ConnectConsumer();
  ASSERT_TRUE(consumer_a->EnableTracing(MakeConfig(256, "a.ds")).ok());
  ASSERT_TRUE(consumer_b->EnableTracing(MakeConfig(256, "b.ds")).ok());
  TestProducer::Started sa, sb;
  ASSERT_TRUE(a.WaitForStart(&sa));
  ASSERT_TRUE(b.WaitForStart(&sb));
  ASSERT_NE(sa.config.target_buffer(), sb.config.target_buffer());
  {
    // Producer a writes into b's buffer: refused.
    auto w = a.arbiter()->CreateTraceWriter(sb.config.target_buffer());
    for (uint32_t i = 0; i < 50; i++) testing::WriteTestPacket(w.get(), {66, 0, i});
    w->Flush();
    auto ok = b.arbiter()->CreateTraceWriter(sb.config.target_buffer());
    for (uint32_t i = 0; i < 50; i++) testing::WriteTestPacket(ok.get(), {2, 0, i});
    ok->Flush();
  }
  StopAndWait(consumer_a.get());
  StopAndWait(consumer_b.get());
  TraceSummary sb_summary = Summarize(ReadAllPackets(consumer_b.get()));
  EXPECT_EQ(sb_summary.seqs.count({66, 0}), 0u);
  EXPECT_EQ(sb_summary.seqs[std::make_pair(2u, 0u)].size(), 50u);
  EXPECT_GT(service_->GetServiceStats().chunks_discarded, 0u);
  a.Detach();
  b.Detach();
}

// A session outlives more producers than there are producer ids (16 bits):
// the producers that left and have nothing left in the buffers are
// forgotten and their ids reused, and a producer with a reused id gets a
// trusted sequence id of its own, never the old producer's.
TEST_F(TracingServiceTest, ASessionOutlivesMoreProducersThanThereAreIds) {
  TracingServiceOptions options;
  options.min_shm_size_bytes = 4096;  // One page each: 65 K connections are quick.
  StartService(options);
  auto consumer = service_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(MakeConfig(1024, "test.ds")).ok());
  TestProducer endpoint;  // Shared: it only records the calls.
  constexpr uint32_t kProducers = 0x10000 + 300;
  // These write a packet; their ids stay taken until it was read. The one
  // after the 16-bit wrap gets the first one's id (1) again, freed by the
  // read half-way: its packet must not pass for the first one's sequence.
  auto writes = [](uint32_t i) { return i % 4096 == 0 || i == 0xffff; };
  std::vector<TracePacket> packets;
  uint32_t target = 0;
  uint32_t writing = 0;
  for (uint32_t i = 0; i < kProducers; i++) {
    if (i == 0x8000) {
      auto first_half = ReadAllPackets(consumer.get());
      packets.insert(packets.end(), first_half.begin(), first_half.end());
    }
    auto conn = service_->ConnectProducer(&endpoint, ProducerOptions{"churn", 4096, 4096});
    ASSERT_TRUE(conn.ok()) << "producer " << i << ": " << conn.status().message();
    conn.value()->RegisterDataSource(DataSourceDescriptor{"test.ds"});
    if (!writes(i)) continue;
    writing++;
    if (target == 0) {
      TestProducer::Started started;
      ASSERT_TRUE(endpoint.WaitForStart(&started, 60000));
      target = started.config.target_buffer();
    }
    SharedMemoryArbiter arbiter(conn.value()->shm_start(), conn.value()->shm_size(),
                                conn.value()->shm_page_size(), conn.value()->commit_data_sink());
    auto writer = arbiter.CreateTraceWriter(target);
    testing::WriteTestPacket(writer.get(), {2, 0, i});
  }
  StopAndWait(consumer.get());
  auto second_half = ReadAllPackets(consumer.get());
  packets.insert(packets.end(), second_half.begin(), second_half.end());
  TraceSummary s = Summarize(packets);
  ASSERT_EQ(s.seqs[std::make_pair(2u, 0u)].size(), writing);
  EXPECT_EQ(s.sequence_ids[std::make_pair(2u, 0u)].size(), writing)
      << "one trusted sequence id per producer, reused producer ids included";
  EXPECT_EQ(s.stats.sluice_service_stats().producers_disconnected(), kProducers);
}

TEST_F(TracingServiceTest, ConfigErrors) {
  StartService();
  auto consumer = service_->ConnectConsumer();
  perfetto::protos::TraceConfig empty;
  EXPECT_FALSE(consumer->EnableTracing(empty).ok());
  auto bad_target = MakeConfig(256, "x");
  bad_target.mutable_data_sources(0)->mutable_config()->set_target_buffer(3);
  EXPECT_FALSE(consumer->EnableTracing(bad_target).ok());
  auto file_no_output = MakeConfig(256, "x");
  file_no_output.set_write_into_file(true);
  EXPECT_FALSE(consumer->EnableTracing(file_no_output).ok());
  auto huge = MakeConfig(256, "x");
  huge.mutable_buffers(0)->set_size_kb(0xffffffffu);
  EXPECT_FALSE(consumer->EnableTracing(huge).ok());
  ASSERT_TRUE(consumer->EnableTracing(MakeConfig(256, "x")).ok());
  EXPECT_FALSE(consumer->EnableTracing(MakeConfig(256, "x")).ok()) << "one session per consumer";
  EXPECT_FALSE(consumer->StartTracing().ok()) << "already started";
  ASSERT_TRUE(consumer->FreeBuffers().ok());
  EXPECT_FALSE(consumer->GetTraceStats().ok());
}

TEST_F(TracingServiceTest, QueryServiceState) {
  StartService();
  TestProducer producer;
  ConnectProducer(&producer, "probes", "linux.ftrace");
  auto consumer = service_->ConnectConsumer();
  auto state = consumer->QueryServiceState();
  ASSERT_TRUE(state.ok());
  ASSERT_EQ(state->producers.size(), 1u);
  EXPECT_EQ(state->producers[0].name, "probes");
  EXPECT_EQ(state->producers[0].pid, static_cast<int32_t>(getpid()));
  ASSERT_EQ(state->data_sources.size(), 1u);
  EXPECT_EQ(state->data_sources[0].name, "linux.ftrace");
  EXPECT_EQ(state->num_sessions, 0u);
  producer.Detach();
}

TEST_F(TracingServiceTest, ReadBuffersInSlices) {
  StartService();
  TestProducer producer;
  ConnectProducer(&producer);
  struct Observer : Consumer {
    std::atomic<bool> disabled{false};
    void OnTracingDisabled(const std::string&) override { disabled = true; }
  } observer;
  ConsumerId id = service_->AddConsumer(&observer, PeerCredentials{});
  ASSERT_TRUE(service_->EnableTracing(id, MakeConfig(4096, "test.ds"), ScopedFd()).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  {
    auto writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer());
    for (uint32_t i = 0; i < 500; i++) testing::WriteTestPacket(writer.get(), {1, 0, i});
    writer->Flush();
  }
  ASSERT_TRUE(service_->DisableTracing(id).ok());
  for (int i = 0; i < 1000 && !observer.disabled; i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(observer.disabled);
  std::vector<TracePacket> packets;
  int calls = 0;
  for (bool more = true; more;) {
    std::vector<std::string> slice;
    ASSERT_TRUE(service_->ReadBuffers(id, &slice, &more, 10000).ok());
    calls++;
    for (const std::string& b : slice) {
      packets.emplace_back();
      packets.back().ParseFromString(b);
    }
  }
  EXPECT_GE(calls, 25);
  TraceSummary s = Summarize(packets);
  EXPECT_EQ(s.seqs[std::make_pair(1u, 0u)].size(), 500u);
  EXPECT_EQ(s.stats_packets, 1);
  EXPECT_TRUE(s.stats_last);
  service_->RemoveConsumer(id);
  producer.Detach();
}

// A commit that finds the service mutex taken does not wait for it (an
// ftrace reader must keep up with the kernel whatever the holder does): it
// is queued, and the holder applies it, in order, before it unlocks. So
// is the registration of a writer, which goes with its first commit: a
// writer created while the lock is held gets all its packets in too.
TEST_F(TracingServiceTest, ACommitNeverWaitsForTheServiceLock) {
  TestProducer producer;
  std::unique_ptr<ConsumerEndpoint> consumer;
  TestProducer::Started started;
  ASSERT_NO_FATAL_FAILURE(StartSession(&producer, &consumer, &started));
  auto writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer(),
                                                      BufferExhaustedPolicy::kStall);
  testing::WriteTestPacket(writer.get(), {1, 0, 0});
  writer->Flush();
  constexpr uint32_t kPackets = 200;
  std::unique_ptr<TraceWriter> late_writer;
  std::future<void> commits;
  service_->RunWithServiceLockForTesting([&] {
    commits = std::async(std::launch::async, [&] {
      late_writer = producer.arbiter()->CreateTraceWriter(started.config.target_buffer(),
                                                          BufferExhaustedPolicy::kStall);
      for (uint32_t i = 1; i < kPackets; i++) {
        testing::WriteTestPacket(writer.get(), {1, 0, i});
        testing::WriteTestPacket(late_writer.get(), {1, 1, i});
        if (i % 50 == 0) writer->Flush();
      }
      writer->Flush();
      late_writer->Flush();
    });
    // A commit that waited for the lock would keep the writer there until
    // this returns: only reached when that is broken.
    EXPECT_EQ(commits.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  });
  commits.get();
  EXPECT_GT(service_->GetServiceStats().commits_deferred, 0u);
  StopAndWait(consumer.get());
  TraceSummary s = Summarize(ReadAllPackets(consumer.get()));
  std::vector<uint32_t> expected(kPackets);
  for (uint32_t i = 0; i < kPackets; i++) expected[i] = i;
  EXPECT_EQ((s.seqs[{1, 0}]), expected);
  expected.erase(expected.begin());
  EXPECT_EQ((s.seqs[{1, 1}]), expected) << "the late writer's packets";
  EXPECT_EQ(service_->GetServiceStats().chunks_not_complete, 0u);
  writer.reset();
  late_writer.reset();
  producer.Detach();
}

// Many threads commit through one arbiter while the consumer reads: run
// under TSan (make SANITIZE=thread) this checks the service's locking.
TEST_F(TracingServiceTest, ConcurrentWritersAndReader) {
  StartService();
  TestProducer producer;
  // Writers wait for free chunks as long as it takes (under TSan the
  // default 100 ms is not always enough): the count below is exact.
  ArbiterOptions patient;
  patient.stall_timeout_ms = 60000;
  ConnectProducer(&producer, "p", "test.ds", ProducerOptions{"", 1u << 20, 4096}, patient);
  auto consumer = service_->ConnectConsumer();
  ASSERT_TRUE(consumer->EnableTracing(MakeConfig(16 * 1024, "test.ds")).ok());
  TestProducer::Started started;
  ASSERT_TRUE(producer.WaitForStart(&started));
  constexpr uint32_t kThreads = 4, kPackets = 2000;
  std::atomic<bool> done{false};
  size_t read_during = 0;
  std::thread reader([&] {
    while (!done.load()) {
      Status st = consumer->ReadBuffers([&](std::string_view) { read_during++; });
      (void)st;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      auto w = producer.arbiter()->CreateTraceWriter(started.config.target_buffer(),
                                                     BufferExhaustedPolicy::kStall);
      for (uint32_t i = 0; i < kPackets; i++) testing::WriteTestPacket(w.get(), {1, t, i});
      w->Flush();
    });
  }
  for (auto& t : threads) t.join();
  done = true;
  reader.join();
  StopAndWait(consumer.get());
  size_t read_after = 0;
  ASSERT_TRUE(consumer->ReadBuffers([&](std::string_view bytes) {
    TracePacket p;
    p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
    TestPacketId id;
    if (testing::ParseTestPacket(p, &id)) read_after++;
  }).ok());
  // The reader may have taken some test packets before: all of them is the
  // sum, minus the service packets read during the run.
  EXPECT_GE(read_during + read_after, size_t{kThreads} * kPackets);
  producer.Detach();
}

}  // namespace
}  // namespace sluice
