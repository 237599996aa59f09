#include "shm/smb_trace_writer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <memory>
#include <set>
#include <thread>

#include "perfetto/trace/trace_packet.pb.h"
#include "shm/shared_memory.h"
#include "shm/shared_memory_arbiter.h"
#include "tests/shm/smb_test_consumer.h"
#include "tests/shm/smb_test_packets.h"

namespace sluice {
namespace {

using testing::CheckTestPacket;
using testing::SmbTestConsumer;
using testing::WriteTestPacket;

// Holds commits back (a service that is not reading) until Release().
class HoldingSink : public CommitDataSink {
 public:
  explicit HoldingSink(CommitDataSink* next) : next_(next) {}
  void CommitData(const CommitDataRequest& r) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (holding_) held_.push_back(r); else next_->CommitData(r);
  }
  void RegisterTraceWriter(uint16_t id, uint32_t b) override { next_->RegisterTraceWriter(id, b); }
  void UnregisterTraceWriter(uint16_t id) override { next_->UnregisterTraceWriter(id); }
  void Release() {
    std::lock_guard<std::mutex> lock(mutex_);
    holding_ = false;
    for (auto& r : held_) next_->CommitData(r);
    held_.clear();
  }
 private:
  CommitDataSink* next_;
  std::mutex mutex_;
  bool holding_ = true;
  std::deque<CommitDataRequest> held_;
};

class SmbTraceWriterTest : public ::testing::Test {
 protected:
  void Init(uint32_t smb_size, uint32_t page_size, PageLayout layout, bool hold = false,
            uint32_t stall_ms = 100) {
    auto shm = SharedMemory::Create(smb_size);
    ASSERT_TRUE(shm.ok()) << shm.status().message();
    shm_ = std::move(shm.value());
    abi_ = SharedMemoryAbi(shm_->start(), shm_->size(), page_size);
    consumer_ = std::make_unique<SmbTestConsumer>(&abi_);
    sink_ = consumer_.get();
    if (hold) {
      holding_ = std::make_unique<HoldingSink>(consumer_.get());
      sink_ = holding_.get();
    }
    ArbiterOptions options;
    options.layout = layout;
    options.stall_timeout_ms = stall_ms;
    arbiter_ = std::make_unique<SharedMemoryArbiter>(shm_->start(), shm_->size(), page_size,
                                                     sink_, options);
    chunk_size_ = ChunkSizeFor(page_size, layout);
  }
  void TearDown() override {
    arbiter_.reset();
    consumer_.reset();
  }
  // 256 chunks: the queue drains by itself at 16 entries (at 2 in a 16-chunk
  // SMB), so what a FlushBatch holds back stays queued.
  void InitForBatches() { Init(256 * 4096, 4096, PageLayout::kDiv1); }
  // Payload bytes of one chunk usable by one packet (minus chunk and packet headers).
  uint32_t PacketRoom() const { return chunk_size_ - sizeof(ChunkHeader) - kPacketHeaderSize; }

  std::unique_ptr<SharedMemory> shm_;
  SharedMemoryAbi abi_;
  std::unique_ptr<SmbTestConsumer> consumer_;
  std::unique_ptr<HoldingSink> holding_;
  CommitDataSink* sink_ = nullptr;
  std::unique_ptr<SharedMemoryArbiter> arbiter_;
  uint32_t chunk_size_ = 0;
};

TEST_F(SmbTraceWriterTest, SmallPacketsArriveInOrderWithSequenceFlags) {
  Init(64 * 1024, 4096, PageLayout::kDiv4);
  auto writer = arbiter_->CreateTraceWriter(0);
  ASSERT_EQ(writer->writer_id(), 1);
  for (uint64_t i = 0; i < 2000; i++) WriteTestPacket(writer.get(), 7, i, i % 50);
  writer->Flush();
  auto r = consumer_->Reassemble();
  ASSERT_EQ(r.packets[1].size(), 2000u);
  for (uint64_t i = 0; i < 2000; i++) {
    uint64_t seq;
    ASSERT_TRUE(CheckTestPacket(r.packets[1][i], 7, &seq));
    EXPECT_EQ(seq, i);
    perfetto::protos::TracePacket p;
    p.ParseFromString(r.packets[1][i]);
    EXPECT_EQ(p.first_packet_on_sequence(), i == 0);
    EXPECT_FALSE(p.previous_packet_dropped());
  }
  EXPECT_EQ(r.broken_chains, 0u);
  EXPECT_EQ(writer->packets_lost(), 0u);
  EXPECT_EQ(consumer_->abi_violations(), 0u);
}

TEST_F(SmbTraceWriterTest, EveryPageLayoutAndPageSize) {
  for (uint32_t page_size : {4096u, 16384u, 65536u}) {
    for (uint32_t l = 1; l < kNumLayouts; l++) {
      Init(page_size * 8, page_size, static_cast<PageLayout>(l));
      auto writer = arbiter_->CreateTraceWriter(0);
      for (uint64_t i = 0; i < 300; i++) WriteTestPacket(writer.get(), 1, i, (i * 37) % 700);
      writer->Flush();
      auto r = consumer_->Reassemble();
      ASSERT_EQ(r.packets[writer->writer_id()].size(), 300u) << page_size << " layout " << l;
      for (uint64_t i = 0; i < 300; i++) {
        uint64_t seq;
        ASSERT_TRUE(CheckTestPacket(r.packets[writer->writer_id()][i], 1, &seq));
        ASSERT_EQ(seq, i);
      }
      writer.reset();
      arbiter_.reset();
    }
  }
}

// A packet whose fragment ends exactly at the chunk's last byte, then one more.
TEST_F(SmbTraceWriterTest, PacketExactlyFillsChunk) {
  Init(16 * 4096, 4096, PageLayout::kDiv4);
  auto writer = arbiter_->CreateTraceWriter(0);
  {
    auto packet = writer->NewTracePacket();
    // first_packet_on_sequence (3) + tag (1) + 2-byte length + bytes = PacketRoom().
    std::string bytes(PacketRoom() - 3 - 3, 'x');
    packet->WriteBytes(1, bytes.data(), bytes.size());
    EXPECT_EQ(packet->cursor(), packet->range_end()) << "fills the chunk exactly";
  }
  WriteTestPacket(writer.get(), 0, 1, 10);
  writer->Flush();
  auto r = consumer_->Reassemble();
  ASSERT_EQ(r.packets[1].size(), 2u);
  EXPECT_EQ(r.packets[1][0].size(), PacketRoom());
  EXPECT_EQ(consumer_->chunks_moved(), 2u);
  EXPECT_EQ(consumer_->patches_applied(), 0u) << "no fragmentation, no patches";
}

TEST_F(SmbTraceWriterTest, PacketSpanningManyChunksNeedsPatches) {
  Init(32 * 4096, 4096, PageLayout::kDiv14);  // 292-byte chunks.
  auto writer = arbiter_->CreateTraceWriter(0);
  // ~10 chunks; three nested size fields sit in the first chunk.
  WriteTestPacket(writer.get(), 3, 42, 10 * PacketRoom());
  WriteTestPacket(writer.get(), 3, 43, 5);
  writer->Flush();
  auto r = consumer_->Reassemble();
  ASSERT_EQ(r.packets[1].size(), 2u);
  uint64_t seq;
  ASSERT_TRUE(CheckTestPacket(r.packets[1][0], 3, &seq));
  EXPECT_EQ(seq, 42u);
  ASSERT_TRUE(CheckTestPacket(r.packets[1][1], 3, &seq));
  EXPECT_EQ(seq, 43u);
  EXPECT_EQ(consumer_->patches_applied(), 3u);
  EXPECT_EQ(r.unpatched_chunks, 0u);
  EXPECT_GE(consumer_->chunks_moved(), 11u);
}

// BeginNested when fewer than 4 bytes are left: the size field goes to the
// next chunk whole and the old chunk's tail is not part of the stream.
TEST_F(SmbTraceWriterTest, SizeFieldNeverSplitsAcrossChunks) {
  for (uint32_t left = 0; left <= 6; left++) {
    Init(16 * 4096, 4096, PageLayout::kDiv7);
    auto writer = arbiter_->CreateTraceWriter(0);
    {
      auto packet = writer->NewTracePacket();
      std::string bytes(PacketRoom() - 3 - 1 - left, 'y');  // Leave `left` + tag byte.
      packet->WriteBytes(1, bytes.data(), bytes.size());
      packet->BeginNested(2);  // Tag fits; the size field may not.
      packet->WriteString(1, "inner message body");
      packet->EndNested();
    }
    writer->Flush();
    auto r = consumer_->Reassemble();
    ASSERT_EQ(r.packets[1].size(), 1u) << left;
    const std::string& p = r.packets[1][0];
    // Decode the tail by hand: tag 0x12, 4-byte redundant size, inner bytes.
    std::string inner_tail = std::string("\x0a\x12") + "inner message body";
    ASSERT_GE(p.size(), inner_tail.size() + 5);
    EXPECT_EQ(p.substr(p.size() - inner_tail.size()), inner_tail) << left;
    uint32_t size = 0;
    ASSERT_EQ(ReadPacketSizeUntrusted(
                  reinterpret_cast<const uint8_t*>(p.data()) + p.size() - inner_tail.size() - 4,
                  4, &size),
              4u);
    EXPECT_EQ(size, inner_tail.size()) << left;
    writer.reset();
    arbiter_.reset();
  }
}

TEST_F(SmbTraceWriterTest, FlushCommitsPartialChunkAndCarriesRequestId) {
  Init(16 * 4096, 4096, PageLayout::kDiv1);
  auto writer = arbiter_->CreateTraceWriter(2);
  WriteTestPacket(writer.get(), 0, 1, 10);
  EXPECT_EQ(consumer_->chunks_moved(), 0u);
  writer->Flush();
  EXPECT_EQ(consumer_->chunks_moved(), 1u);
  arbiter_->FlushPendingCommitData(77);
  EXPECT_EQ(consumer_->last_flush_id(), 77u);
  // An empty writer does not give up its (empty) chunk on Flush.
  writer->Flush();
  EXPECT_EQ(consumer_->chunks_moved(), 1u);
}

TEST_F(SmbTraceWriterTest, AFlushBatchSendsItsWritersChunksAsOneCommitCarryingTheFlushId) {
  InitForBatches();
  auto cpu0 = arbiter_->CreateTraceWriter(1);
  auto cpu1 = arbiter_->CreateTraceWriter(1);
  WriteTestPacket(cpu0.get(), 0, 1, 10);
  WriteTestPacket(cpu1.get(), 1, 1, 10);
  const uint64_t calls_before = arbiter_->stats().commit_calls;
  {
    SharedMemoryArbiter::FlushBatch batch(arbiter_.get(), 42);
    cpu0->Flush();
    cpu1->Flush();
    EXPECT_EQ(consumer_->chunks_moved(), 0u);
    EXPECT_EQ(arbiter_->stats().commit_calls, calls_before);
  }
  EXPECT_EQ(consumer_->chunks_moved(), 2u);
  EXPECT_EQ(arbiter_->stats().commit_calls, calls_before + 1);
  EXPECT_EQ(consumer_->last_flush_id(), 42u);
  // After the batch a writer's Flush sends at once again.
  WriteTestPacket(cpu0.get(), 0, 2, 10);
  cpu0->Flush();
  EXPECT_EQ(consumer_->chunks_moved(), 3u);
}

TEST_F(SmbTraceWriterTest, AFlushBatchHoldsBackOnlyItsOwnThreadsFlushes) {
  InitForBatches();
  auto own = arbiter_->CreateTraceWriter(1);
  auto other = arbiter_->CreateTraceWriter(1);
  WriteTestPacket(own.get(), 0, 1, 10);
  {
    SharedMemoryArbiter::FlushBatch batch(arbiter_.get(), 7);
    own->Flush();
    std::thread([&] {
      WriteTestPacket(other.get(), 1, 1, 10);
      other->Flush();
    }).join();
    // The other thread's Flush delivered what was queued, this thread's
    // chunk with it (the queue is one FIFO); the flush id waits for the
    // batch's end.
    EXPECT_EQ(consumer_->chunks_moved(), 2u);
    EXPECT_EQ(consumer_->last_flush_id(), 0u);
  }
  EXPECT_EQ(consumer_->last_flush_id(), 7u);
}

// Records the SMB pages of the chunks moved, and passes everything on.
class PageRecordingSink : public CommitDataSink {
 public:
  explicit PageRecordingSink(CommitDataSink* next) : next_(next) {}
  void CommitData(const CommitDataRequest& r) override {
    for (const ChunkToMove& m : r.chunks_to_move) pages.insert(m.page);
    next_->CommitData(r);
  }
  void RegisterTraceWriter(uint16_t id, uint32_t b) override { next_->RegisterTraceWriter(id, b); }
  void UnregisterTraceWriter(uint16_t id) override { next_->UnregisterTraceWriter(id); }
  std::set<uint32_t> pages;

 private:
  CommitDataSink* next_;
};

// A recorder at rest: each flush round its writers fill a few chunks, which
// the service frees before the next round. They go back to the same pages
// round after round; scanning on from where the last chunk was taken, they
// had walked into pages never touched before (a page fault each, in the
// producer and in the service) until they had gone round the whole SMB.
TEST_F(SmbTraceWriterTest, WritersThatFlushEachRoundKeepToTheSamePages) {
  Init(64 * 4096, 4096, PageLayout::kDiv1);
  PageRecordingSink recording(consumer_.get());
  arbiter_ = std::make_unique<SharedMemoryArbiter>(shm_->start(), shm_->size(), 4096, &recording);
  auto cpu0 = arbiter_->CreateTraceWriter(1);
  auto cpu1 = arbiter_->CreateTraceWriter(1);
  constexpr int kRounds = 40;
  for (int round = 0; round < kRounds; round++) {
    WriteTestPacket(cpu0.get(), 0, round, 2 * PacketRoom());  // Three chunks.
    WriteTestPacket(cpu1.get(), 1, round, PacketRoom() / 2);  // One.
    SharedMemoryArbiter::FlushBatch batch(arbiter_.get(), round + 1);
    cpu0->Flush();
    cpu1->Flush();
  }
  EXPECT_GE(consumer_->chunks_moved(), 4u * kRounds);
  // A round's four chunks, and as many again for where the two writers'
  // pages meet; a walk would have gone round all 64 pages.
  EXPECT_LE(recording.pages.size(), 8u);
  auto r = consumer_->Reassemble();
  EXPECT_EQ(r.packets[1].size() + r.packets[2].size(), 2u * kRounds);
  cpu0.reset();
  cpu1.reset();
  arbiter_.reset();  // Before `recording`, its sink, goes.
}

TEST_F(SmbTraceWriterTest, DropPolicyCountsLossAndMarksNextPacket) {
  Init(4096, 4096, PageLayout::kDiv2, /*hold=*/true);  // Two chunks in all.
  auto writer = arbiter_->CreateTraceWriter(0, BufferExhaustedPolicy::kDrop);
  uint64_t written = 0;
  while (writer->packets_lost() == 0) WriteTestPacket(writer.get(), 0, written++, 100);
  EXPECT_EQ(writer->packets_lost(), 1u);
  WriteTestPacket(writer.get(), 0, written++, 100);  // Also lost: still no chunk.
  EXPECT_EQ(writer->packets_lost(), 2u);
  holding_->Release();  // The service frees the chunks.
  WriteTestPacket(writer.get(), 0, written++, 100);
  writer->Flush();
  auto r = consumer_->Reassemble();
  auto& packets = r.packets[1];
  EXPECT_EQ(packets.size() + writer->packets_lost(), written);
  perfetto::protos::TracePacket last;
  ASSERT_TRUE(last.ParseFromString(packets.back()));
  EXPECT_EQ(last.timestamp(), written - 1);
  EXPECT_TRUE(last.previous_packet_dropped());
}

TEST_F(SmbTraceWriterTest, DropInTheMiddleOfAPacketBreaksTheChainVisibly) {
  Init(4096, 4096, PageLayout::kDiv4, /*hold=*/true);  // Four 1020-byte chunks.
  auto writer = arbiter_->CreateTraceWriter(0);
  WriteTestPacket(writer.get(), 0, 1, 6 * PacketRoom());  // Needs ~6 chunks: dropped.
  EXPECT_EQ(writer->packets_lost(), 1u);
  holding_->Release();
  WriteTestPacket(writer.get(), 0, 2, 10);
  writer->Flush();
  auto r = consumer_->Reassemble();
  ASSERT_EQ(r.packets[1].size(), 1u);
  EXPECT_EQ(r.broken_chains, 1u) << "the committed fragments are discarded, not emitted";
  perfetto::protos::TracePacket p;
  ASSERT_TRUE(p.ParseFromString(r.packets[1][0]));
  EXPECT_EQ(p.timestamp(), 2u);
  EXPECT_TRUE(p.previous_packet_dropped());
}

TEST_F(SmbTraceWriterTest, StallPolicyWaitsForTheServiceThenSucceeds) {
  Init(4096, 4096, PageLayout::kDiv2, /*hold=*/true, /*stall_ms=*/5000);
  auto writer = arbiter_->CreateTraceWriter(0, BufferExhaustedPolicy::kStall);
  std::thread releaser([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    holding_->Release();
  });
  for (uint64_t i = 0; i < 200; i++) WriteTestPacket(writer.get(), 0, i, 100);
  releaser.join();
  writer->Flush();
  EXPECT_EQ(writer->packets_lost(), 0u);
  EXPECT_EQ(consumer_->Reassemble().packets[1].size(), 200u);
}

TEST_F(SmbTraceWriterTest, StallPolicyGivesUpAfterTimeoutAndCounts) {
  Init(4096, 4096, PageLayout::kDiv2, /*hold=*/true, /*stall_ms=*/20);
  auto writer = arbiter_->CreateTraceWriter(0, BufferExhaustedPolicy::kStall);
  uint64_t i = 0;
  auto start = std::chrono::steady_clock::now();
  while (writer->packets_lost() == 0) WriteTestPacket(writer.get(), 0, i++, 100);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(20));
  EXPECT_EQ(writer->packets_lost(), 1u);
}

// Once the service is known to be gone, a stalling writer drops at once: no
// chunk will ever be freed, and each packet waiting stall_timeout_ms would
// keep the probes from restoring tracefs for minutes.
TEST_F(SmbTraceWriterTest, StallPolicyDropsAtOnceWhenTheServiceIsGone) {
  Init(4096, 4096, PageLayout::kDiv2, /*hold=*/true, /*stall_ms=*/60000);
  auto writer = arbiter_->CreateTraceWriter(0, BufferExhaustedPolicy::kStall);
  for (uint64_t i = 0; i < 4; i++) WriteTestPacket(writer.get(), 0, i, 100);  // Fits.
  arbiter_->MarkServiceGone();
  uint64_t i = 0;
  const auto start = std::chrono::steady_clock::now();
  while (writer->packets_lost() < 100) WriteTestPacket(writer.get(), 0, i++, 1000);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30))
      << "each drop waited for the stall timeout";
  // Full, but no chunk will be freed again: a reader must not wait for room.
  EXPECT_EQ(writer->RoomBytes(4096), 4096u);
}

// A reader asks for room before every few kernel pages. The answer comes
// from the last scan's count, less a page for every chunk taken since, so a
// recorder at rest does not load the SMB's page headers (each on a page of
// its own, cold after minutes) question after question. Exact all the same:
// once the takes since could have used the room, the next question scans.
TEST_F(SmbTraceWriterTest, FreeBytesScansOnlyWhenTakesSinceTheLastScanCouldHaveUsedTheRoom) {
  Init(64 * 4096, 4096, PageLayout::kDiv1, /*hold=*/true);  // 64 pages of one chunk.
  const uint64_t page = ChunkSizeFor(4096, PageLayout::kDiv1);
  EXPECT_EQ(arbiter_->FreeBytes(8 * page), 8 * page);
  EXPECT_EQ(arbiter_->stats().free_space_scans, 1u);
  for (int i = 0; i < 100; i++) EXPECT_EQ(arbiter_->FreeBytes(8 * page), 8 * page);
  EXPECT_EQ(arbiter_->stats().free_space_scans, 1u) << "nothing was taken: the scan's count stands";
  for (uint64_t taken = 1; taken <= 64; taken++) {
    ASSERT_TRUE(arbiter_->GetNewChunk().valid());
    EXPECT_EQ(arbiter_->FreeBytes(8 * page), std::min((64 - taken) * page, 8 * page)) << taken << " taken";
  }
  EXPECT_LT(arbiter_->stats().free_space_scans, 20u) << "a scan per take";
}

// RoomBytes() counts the SMB's free chunk space less a headroom for the
// SMB's other writers (here, with 4 KiB pages in 2 chunks of 2044 bytes, a
// chunk and an eighth of the SMB): room while pages are free, none once a
// held service has every chunk, room again as soon as it frees them.
TEST_F(SmbTraceWriterTest, RoomBytesFollowsTheFreeChunks) {
  Init(8 * 4096, 4096, PageLayout::kDiv2, /*hold=*/true);  // 16 chunks.
  auto writer = arbiter_->CreateTraceWriter(0, BufferExhaustedPolicy::kDrop);
  const uint64_t headroom = 8 * 4096 / 8 + chunk_size_;
  const uint64_t all = 8 * ChunkSizeFor(4096, PageLayout::kDiv1);  // Unpartitioned pages.
  EXPECT_EQ(writer->RoomBytes(100), 100u);
  EXPECT_EQ(writer->RoomBytes(1u << 30), all - headroom) << "all of it but the headroom";
  uint64_t written = 0;
  while (writer->packets_lost() == 0) WriteTestPacket(writer.get(), 0, written++, 100);
  EXPECT_EQ(writer->RoomBytes(1u << 30), 0u);
  holding_->Release();
  EXPECT_GT(writer->RoomBytes(1u << 30), 0u) << "the service freed the chunks";
}

TEST_F(SmbTraceWriterTest, WriterIdExhaustionAndReuse) {
  Init(1024 * 4096, 4096, PageLayout::kDiv14);
  std::vector<std::unique_ptr<TraceWriter>> writers;
  std::set<uint16_t> ids;
  for (int i = 0; i < kMaxWriterId; i++) {
    writers.push_back(arbiter_->CreateTraceWriter(0));
    ids.insert(writers.back()->writer_id());
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kMaxWriterId));
  EXPECT_EQ(*ids.begin(), 1);
  EXPECT_EQ(*ids.rbegin(), kMaxWriterId);
  auto extra = arbiter_->CreateTraceWriter(0);
  EXPECT_EQ(extra->writer_id(), 0);
  WriteTestPacket(extra.get(), 0, 1, 10);
  EXPECT_EQ(extra->packets_lost(), 1u);
  EXPECT_EQ(arbiter_->stats().writer_ids_exhausted, 1u);

  // Id 500's writer writes two chunks' worth, goes away; its id is reused and
  // the chunk-id sequence continues.
  WriteTestPacket(writers[499].get(), 0, 1, 10);
  writers[499]->Flush();
  WriteTestPacket(writers[499].get(), 0, 2, 10);
  writers[499].reset();
  auto reused = arbiter_->CreateTraceWriter(0);
  EXPECT_EQ(reused->writer_id(), 500);
  WriteTestPacket(reused.get(), 0, 3, 10);
  reused->Flush();
  auto r = consumer_->Reassemble();
  ASSERT_EQ(r.packets[500].size(), 3u);
  perfetto::protos::TracePacket p;
  ASSERT_TRUE(p.ParseFromString(r.packets[500][2]));
  EXPECT_TRUE(p.first_packet_on_sequence()) << "a new writer starts a new sequence";
  EXPECT_EQ(consumer_->unregistrations(), 1);
  writers.clear();
}

TEST_F(SmbTraceWriterTest, MisusedPacketIsTakenBackAndCounted) {
  Init(16 * 4096, 4096, PageLayout::kDiv1);
  auto writer = arbiter_->CreateTraceWriter(0);
  WriteTestPacket(writer.get(), 0, 1, 10);
  {
    auto packet = writer->NewTracePacket();
    packet->WriteVarInt(8, 2);
    packet->EndNested();  // No matching BeginNested.
  }
  WriteTestPacket(writer.get(), 0, 3, 10);
  writer->Flush();
  EXPECT_EQ(writer->packets_lost(), 1u);
  auto r = consumer_->Reassemble();
  ASSERT_EQ(r.packets[1].size(), 2u);
  perfetto::protos::TracePacket p;
  ASSERT_TRUE(p.ParseFromString(r.packets[1][1]));
  EXPECT_EQ(p.timestamp(), 3u);
  EXPECT_TRUE(p.previous_packet_dropped());
}

TEST_F(SmbTraceWriterTest, ManyPacketsPerChunkCappedAt1023) {
  Init(16 * 65536, 65536, PageLayout::kDiv1);
  auto writer = arbiter_->CreateTraceWriter(0);
  for (uint64_t i = 0; i < 3000; i++) WriteTestPacket(writer.get(), 0, i, 0);
  writer->Flush();
  auto r = consumer_->Reassemble();
  EXPECT_EQ(r.packets[1].size(), 3000u);
  EXPECT_EQ(consumer_->chunks_moved(), 3u);  // 1023 + 1023 + 954.
}

}  // namespace
}  // namespace sluice
