#include "service/trace_buffer.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "shm/shm_abi.h"

namespace sluice {
namespace {

using Policy = TraceBuffer::FillPolicy;
using ReadMode = TraceBuffer::ReadMode;

constexpr uint16_t kFirst = ChunkHeader::kFirstPacketContinuesFromPrevChunk;
constexpr uint16_t kLast = ChunkHeader::kLastPacketContinuesOnNextChunk;
constexpr uint16_t kPatch = ChunkHeader::kChunkNeedsPatching;

// A fragment as it sits in a chunk payload: 4-byte redundant varint + bytes.
std::string Frag(const std::string& data) {
  const uint32_t n = static_cast<uint32_t>(data.size());
  std::string out = {static_cast<char>(0x80 | (n & 0x7f)),
                     static_cast<char>(0x80 | ((n >> 7) & 0x7f)),
                     static_cast<char>(0x80 | ((n >> 14) & 0x7f)),
                     static_cast<char>((n >> 21) & 0x7f)};
  return out + data;
}

// The payload of a chunk (what follows the ChunkHeader), zero-filled to pad_to.
std::string Payload(const std::vector<std::string>& fragments, size_t pad_to = 0) {
  std::string out;
  for (const std::string& f : fragments) out += Frag(f);
  if (out.size() < pad_to) out.resize(pad_to, '\0');
  return out;
}

// Size of the record a payload takes in the ring.
uint64_t Rec(size_t payload_size) { return (16 + payload_size + 15) & ~size_t{15}; }
uint64_t Rec(const std::vector<std::string>& fragments) { return Rec(Payload(fragments).size()); }

struct Packet {
  std::string data;
  uint16_t producer = 0;
  uint16_t writer = 0;
  bool dropped = false;
};

#define EXPECT_STAT(field) EXPECT_EQ(actual.field, expected.field) << #field
void ExpectStats(const TraceBufferStats& actual, const TraceBufferStats& expected) {
  EXPECT_STAT(buffer_size);
  EXPECT_STAT(bytes_written);
  EXPECT_STAT(bytes_overwritten);
  EXPECT_STAT(bytes_read);
  EXPECT_STAT(padding_bytes_written);
  EXPECT_STAT(padding_bytes_cleared);
  EXPECT_STAT(chunks_written);
  EXPECT_STAT(chunks_rewritten);
  EXPECT_STAT(chunks_overwritten);
  EXPECT_STAT(chunks_discarded);
  EXPECT_STAT(chunks_read);
  EXPECT_STAT(chunks_committed_out_of_order);
  EXPECT_STAT(write_wrap_count);
  EXPECT_STAT(patches_succeeded);
  EXPECT_STAT(patches_failed);
  EXPECT_STAT(readaheads_succeeded);
  EXPECT_STAT(readaheads_failed);
  EXPECT_STAT(abi_violations);
  EXPECT_STAT(trace_writer_packet_loss);
}
#undef EXPECT_STAT

class TraceBufferTest : public ::testing::Test {
 protected:
  void Make(size_t size, Policy policy = Policy::kRingBuffer,
            size_t first_lap = TraceBuffer::kFirstLapBytes) {
    tb_ = TraceBuffer::Create(size, policy, first_lap);
    ASSERT_NE(tb_, nullptr);
  }
  void TearDown() override {
    if (tb_) {
      EXPECT_TRUE(tb_->CheckInvariantsForTesting());
    }
  }

  void Copy(uint16_t writer, uint32_t id, const std::vector<std::string>& fragments,
            uint16_t flags = 0, uint16_t producer = 1, bool complete = true, size_t pad_to = 0) {
    std::string p = Payload(fragments, pad_to);
    tb_->CopyChunkUntrusted(producer, 1000 + producer, writer, id,
                            static_cast<uint16_t>(fragments.size()), flags,
                            reinterpret_cast<const uint8_t*>(p.data()), p.size(), complete);
    ASSERT_TRUE(tb_->CheckInvariantsForTesting());
  }
  void CopyRaw(uint16_t writer, uint32_t id, uint16_t count, uint16_t flags, const std::string& p) {
    tb_->CopyChunkUntrusted(1, 1001, writer, id, count, flags,
                            reinterpret_cast<const uint8_t*>(p.data()), p.size());
    ASSERT_TRUE(tb_->CheckInvariantsForTesting());
  }

  std::vector<Packet> Read(ReadMode mode = ReadMode::kIncremental) {
    std::vector<Packet> out;
    tb_->BeginRead(mode);
    Packet p;
    TraceBuffer::PacketSequenceProperties seq;
    while (tb_->ReadNextTracePacket(&p.data, &seq, &p.dropped)) {
      p.producer = seq.producer;
      p.writer = seq.writer;
      EXPECT_EQ(seq.producer_uid, 1000u + seq.producer);
      out.push_back(p);
    }
    EXPECT_TRUE(tb_->CheckInvariantsForTesting());
    return out;
  }
  // "data" for kept packets, "!data" for packets marked previous_packet_dropped.
  std::vector<std::string> ReadMarked(ReadMode mode = ReadMode::kIncremental) {
    std::vector<std::string> out;
    for (const Packet& p : Read(mode)) out.push_back((p.dropped ? "!" : "") + p.data);
    return out;
  }

  TraceBufferStats Expected() const {
    TraceBufferStats s;
    s.buffer_size = tb_->size();
    return s;
  }

  std::unique_ptr<TraceBuffer> tb_;
};

using Strings = std::vector<std::string>;

TEST_F(TraceBufferTest, CreateChecksSize) {
  EXPECT_EQ(TraceBuffer::Create(0, Policy::kRingBuffer), nullptr);
  EXPECT_EQ(TraceBuffer::Create(63, Policy::kRingBuffer), nullptr);
  EXPECT_EQ(TraceBuffer::Create(size_t{TraceBuffer::kMaxSize} + 16, Policy::kDiscard), nullptr);
  Make(100);
  EXPECT_EQ(tb_->size(), 96u);
  EXPECT_EQ(tb_->stats().buffer_size, 96u);
  EXPECT_EQ(tb_->fill_policy(), Policy::kRingBuffer);
  EXPECT_TRUE(Read().empty());
}

TEST_F(TraceBufferTest, PacketsOfOneChunkInOrder) {
  Make(4096);
  Copy(1, 1, {"a", "bb", "ccc"});
  std::vector<Packet> got = Read();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].data, "a");
  EXPECT_EQ(got[1].data, "bb");
  EXPECT_EQ(got[2].data, "ccc");
  // As upstream: the first packet of a sequence is marked, the buffer cannot
  // know what came before it.
  EXPECT_TRUE(got[0].dropped);
  EXPECT_FALSE(got[1].dropped);
  EXPECT_FALSE(got[2].dropped);
  EXPECT_EQ(got[0].producer, 1);
  EXPECT_EQ(got[0].writer, 1);
  EXPECT_TRUE(Read().empty());  // Reads remove what they return.

  TraceBufferStats e = Expected();
  e.chunks_written = 1;
  e.bytes_written = Rec({"a", "bb", "ccc"});
  e.chunks_read = 1;
  e.bytes_read = e.bytes_written;
  ExpectStats(tb_->stats(), e);
}

TEST_F(TraceBufferTest, UnusedPayloadTailAndEmptyPacketsAreIgnored) {
  Make(4096);
  Copy(1, 1, {"a", "", "b"}, 0, 1, true, /*pad_to=*/200);
  Copy(1, 2, {}, 0, 1, true, 64);
  Copy(1, 3, {"c"});
  EXPECT_EQ(ReadMarked(), (Strings{"!a", "b", "c"}));
  EXPECT_EQ(tb_->stats().chunks_read, 3u);
  EXPECT_EQ(tb_->stats().bytes_written, Rec(200) + Rec(64) + Rec({"c"}));
}

TEST_F(TraceBufferTest, SequencesAreIndependentAndOrdered) {
  Make(8192);
  Copy(2, 1, {"w2-1"}, 0, 1);
  Copy(1, 1, {"w1-1"}, 0, 1);
  Copy(1, 1, {"p2w1-1"}, 0, 2);
  Copy(1, 2, {"w1-2"}, 0, 1);
  Copy(2, 2, {"w2-2"}, 0, 1);
  Copy(1, 2, {"p2w1-2"}, 0, 2);
  std::vector<Packet> got = Read();
  std::map<std::pair<int, int>, Strings> by_seq;
  for (const Packet& p : got) by_seq[{p.producer, p.writer}].push_back(p.data);
  EXPECT_EQ(by_seq[std::make_pair(1, 1)], (Strings{"w1-1", "w1-2"}));
  EXPECT_EQ(by_seq[std::make_pair(1, 2)], (Strings{"w2-1", "w2-2"}));
  EXPECT_EQ(by_seq[std::make_pair(2, 1)], (Strings{"p2w1-1", "p2w1-2"}));
  // Sequences come in (producer, writer) order within a pass.
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0].data, "w1-1");
  EXPECT_EQ(got[4].data, "p2w1-1");
}

TEST_F(TraceBufferTest, PacketFragmentedAcrossFourChunks) {
  Make(4096);
  Copy(1, 1, {"p1", "p2:a"}, kLast);
  Copy(1, 2, {"p2:b"}, kFirst | kLast);
  Copy(1, 3, {"p2:c"}, kFirst | kLast);
  Copy(1, 4, {"p2:d", "p3"}, kFirst);
  EXPECT_EQ(ReadMarked(), (Strings{"!p1", "p2:ap2:bp2:cp2:d", "p3"}));
  TraceBufferStats e = Expected();
  e.chunks_written = 4;
  e.bytes_written = Rec({"p1", "p2:a"}) + 2 * Rec({"p2:b"}) + Rec({"p2:d", "p3"});
  e.chunks_read = 4;
  e.bytes_read = e.bytes_written;
  e.readaheads_succeeded = 1;
  ExpectStats(tb_->stats(), e);
}

// A reader that appends to each packet (the service's trusted fields) asks
// for tailroom and gets it, for a packet in one piece and for a joined one.
TEST_F(TraceBufferTest, APacketReadWithTailroomHasThatMuchCapacityLeft) {
  Make(4096);
  Copy(1, 1, {"p1", "p2:a"}, kLast);
  Copy(1, 2, {"p2:b"}, kFirst);
  tb_->BeginRead();
  TraceBuffer::PacketSequenceProperties seq;
  bool dropped = false;
  for (const char* expected : {"p1", "p2:ap2:b"}) {
    std::string packet;
    ASSERT_TRUE(tb_->ReadNextTracePacket(&packet, &seq, &dropped, 60));
    EXPECT_EQ(packet, expected);
    EXPECT_GE(packet.capacity(), packet.size() + 60);
  }
}

TEST_F(TraceBufferTest, FragmentedPacketWaitsForItsLastPiece) {
  Make(4096);
  Copy(1, 1, {"p1", "p2:a"}, kLast);
  Copy(1, 2, {"p2:b"}, kFirst | kLast);
  EXPECT_EQ(ReadMarked(), (Strings{"!p1"}));
  EXPECT_EQ(tb_->stats().readaheads_failed, 1u);
  EXPECT_EQ(tb_->stats().chunks_read, 0u);
  EXPECT_TRUE(Read().empty());
  EXPECT_EQ(tb_->stats().readaheads_failed, 2u);  // One per attempt.
  Copy(1, 3, {"p2:c"}, kFirst);
  EXPECT_EQ(ReadMarked(), (Strings{"p2:ap2:bp2:c"}));
  EXPECT_EQ(tb_->stats().readaheads_succeeded, 1u);
  EXPECT_EQ(tb_->stats().chunks_read, 3u);
}

TEST_F(TraceBufferTest, OutOfOrderCommitsAreReordered) {
  Make(4096);
  Copy(1, 3, {"p3:b", "p4"}, kFirst);
  Copy(1, 1, {"p1"});
  Copy(1, 4, {"p5"});
  Copy(1, 2, {"p2", "p3:a"}, kLast);
  EXPECT_EQ(ReadMarked(), (Strings{"!p1", "p2", "p3:ap3:b", "p4", "p5"}));
  TraceBufferStats e = Expected();
  e.chunks_written = 4;
  e.bytes_written = Rec({"p3:b", "p4"}) + Rec({"p1"}) + Rec({"p5"}) + Rec({"p2", "p3:a"});
  e.chunks_read = 4;
  e.bytes_read = e.bytes_written;
  e.chunks_committed_out_of_order = 2;  // 1 after 3, 2 after 4.
  e.readaheads_succeeded = 1;
  ExpectStats(tb_->stats(), e);
}

TEST_F(TraceBufferTest, ChunkIdsWrapAround) {
  Make(4096);
  Copy(1, 0xffffffffu, {"b", "c:1"}, kLast);
  Copy(1, 0xfffffffeu, {"a"});
  Copy(1, 1, {"d"});
  Copy(1, 0, {"c:2"}, kFirst);
  EXPECT_EQ(ReadMarked(), (Strings{"!a", "b", "c:1c:2", "d"}));
  EXPECT_EQ(tb_->stats().chunks_committed_out_of_order, 2u);
  // Continuity holds across the wrap for later reads too.
  Copy(1, 2, {"e"});
  EXPECT_EQ(ReadMarked(), (Strings{"e"}));
  // And the gap rule: 4 is held after 2 until 3 comes.
  Copy(1, 4, {"g"});
  EXPECT_TRUE(Read().empty());
  Copy(1, 3, {"f"});
  EXPECT_EQ(ReadMarked(), (Strings{"f", "g"}));
}

// --- Gaps (upstream buffers.md: 1,2,5,6 -> only 1,2). ---

TEST_F(TraceBufferTest, GapHoldsLaterChunksUntilFilled) {
  Make(4096);
  for (uint32_t id : {1u, 2u, 5u, 6u}) Copy(1, id, {"c" + std::to_string(id)});
  EXPECT_EQ(ReadMarked(), (Strings{"!c1", "c2"}));
  EXPECT_TRUE(Read().empty());  // Still held: 3, 4 may come out of order.
  Copy(1, 4, {"c4"});
  Copy(1, 3, {"c3"});
  EXPECT_EQ(ReadMarked(), (Strings{"c3", "c4", "c5", "c6"}));
}

TEST_F(TraceBufferTest, GapReleasedWhenTheReadChunksBeforeItAreOverwritten) {
  // 8 records of 128 bytes fill the 1 KiB ring exactly.
  const std::string big(100, 'x');
  ASSERT_EQ(Rec({big}), 128u);
  Make(1024);
  for (uint32_t id : {1u, 2u, 5u, 6u}) Copy(1, id, {big + std::to_string(id)});  // 128 B each
  EXPECT_EQ(Read().size(), 2u);  // 1, 2
  // Another writer fills the rest, wraps, and overwrites the read 1 and 2.
  for (uint32_t id = 1; id <= 6; id++) Copy(2, id, {big});
  std::vector<Packet> got = Read();
  Strings w1;
  for (const Packet& p : got)
    if (p.writer == 1) w1.push_back((p.dropped ? "!" : "") + p.data.substr(100));
  EXPECT_EQ(w1, (Strings{"!5", "6"}));
  EXPECT_EQ(tb_->stats().chunks_overwritten, 0u);  // 1, 2 had been read.
  EXPECT_EQ(tb_->stats().write_wrap_count, 1u);
}

TEST_F(TraceBufferTest, GapOfUnreadChunksOverwrittenAsInBuffersMd) {
  const std::string big(100, 'x');
  Make(1024);
  for (uint32_t id : {1u, 2u, 5u, 6u, 7u, 8u, 9u, 10u}) Copy(1, id, {big + std::to_string(id)});
  // Full. 11 and 12 overwrite 1 and 2, clearing the gap.
  Copy(1, 11, {big + "11"});
  Copy(1, 12, {big + "12"});
  Strings got;
  for (const Packet& p : Read()) got.push_back((p.dropped ? "!" : "") + p.data.substr(100));
  EXPECT_EQ(got, (Strings{"!5", "6", "7", "8", "9", "10", "11", "12"}));
  TraceBufferStats e = Expected();
  e.chunks_written = 10;
  e.bytes_written = 10 * 128;
  e.chunks_overwritten = 2;
  e.bytes_overwritten = 2 * 128;
  e.write_wrap_count = 1;
  e.chunks_read = 8;
  e.bytes_read = 8 * 128;
  ExpectStats(tb_->stats(), e);
}

// Chunks known lost (a relay dropped them) release the gap at once; a gap
// that goes further than what is known lost is still held.
TEST_F(TraceBufferTest, ChunksKnownLostReleaseTheGapAtOnce) {
  Make(4096);
  for (uint32_t id : {1u, 2u, 5u, 6u}) Copy(1, id, {"c" + std::to_string(id)});
  EXPECT_EQ(ReadMarked(), (Strings{"!c1", "c2"}));
  tb_->MarkChunksLost(1, 1, 3);  // 4 may still come.
  EXPECT_TRUE(Read().empty());
  tb_->MarkChunksLost(1, 1, 4);
  EXPECT_EQ(ReadMarked(), (Strings{"!c5", "c6"}));
  // Lost ahead of what came: the next gap up to it is not waited for either.
  tb_->MarkChunksLost(1, 1, 8);
  Copy(1, 9, {"c9"});
  EXPECT_EQ(ReadMarked(), (Strings{"!c9"}));
  // A lost chunk that comes after all is late: dropped and counted.
  const uint64_t discarded = tb_->stats().chunks_discarded;
  Copy(1, 7, {"c7"});
  EXPECT_TRUE(Read().empty());
  EXPECT_EQ(tb_->stats().chunks_discarded, discarded + 1);
  // Another writer's and another producer's sequences are not touched, nor
  // is a sequence with no chunk here.
  Copy(2, 1, {"w2"});
  Copy(2, 3, {"w2c3"});
  tb_->MarkChunksLost(2, 1, 2);
  tb_->MarkChunksLost(1, 5, 2);
  EXPECT_EQ(ReadMarked(), (Strings{"!w2"}));
  EXPECT_TRUE(tb_->CheckInvariantsForTesting());
}

// A packet whose middle piece a relay dropped cannot be completed: once that
// chunk is known lost the reader drops the packet and goes on, instead of
// holding the sequence until the final read (a relayed machine's data then
// stopped reaching a streamed file after the relay's first drop).
TEST_F(TraceBufferTest, ChunkKnownLostBreaksTheJoinItWasPartOf) {
  Make(4096);
  Copy(1, 1, {"p1", "p2:a"}, kLast);
  Copy(1, 3, {"p2:c", "p3"}, kFirst);
  EXPECT_EQ(ReadMarked(), (Strings{"!p1"}));  // 2 may still come.
  EXPECT_EQ(tb_->stats().readaheads_failed, 1u);
  tb_->MarkChunksLost(1, 1, 2);
  EXPECT_EQ(ReadMarked(), (Strings{"!p3"}));
  // The relay counted the chunk; the writer broke nothing.
  EXPECT_EQ(tb_->stats().trace_writer_packet_loss, 0u);
  EXPECT_EQ(tb_->stats().readaheads_failed, 1u);
  EXPECT_EQ(tb_->stats().chunks_read, 2u);
  // Known lost before the first read of the packet: no wait at all.
  Copy(1, 4, {"p4:a"}, kLast);
  tb_->MarkChunksLost(1, 1, 5);
  Copy(1, 6, {"p4:c", "p5"}, kFirst);
  EXPECT_EQ(ReadMarked(), (Strings{"!p5"}));
  EXPECT_TRUE(tb_->CheckInvariantsForTesting());
}

TEST_F(TraceBufferTest, FinalReadReleasesGap) {
  Make(4096);
  for (uint32_t id : {1u, 2u, 5u, 6u}) Copy(1, id, {"c" + std::to_string(id)});
  EXPECT_EQ(ReadMarked(), (Strings{"!c1", "c2"}));
  EXPECT_EQ(ReadMarked(ReadMode::kFinal), (Strings{"!c5", "c6"}));
}

TEST_F(TraceBufferTest, ProducerGoneReleasesGapAndFreesItsState) {
  Make(4096);
  for (uint32_t id : {1u, 2u, 5u}) Copy(1, id, {"c" + std::to_string(id)});
  Copy(1, 1, {"other"}, 0, /*producer=*/2);
  Copy(1, 3, {"other3"}, 0, 2);
  EXPECT_EQ(ReadMarked(), (Strings{"!c1", "c2", "!other"}));
  tb_->MarkProducerGone(1);
  EXPECT_EQ(ReadMarked(), (Strings{"!c5"}));  // Producer 2 still waits for its 2.
  EXPECT_TRUE(Read().empty());
  // A chunk of producer 1 after that starts a new sequence.
  Copy(1, 9, {"c9"});
  EXPECT_EQ(ReadMarked(), (Strings{"!c9"}));
}

// A gone producer is held while it has chunks here, forgotten once they are
// read or overwritten; its id may then come back as a new producer whose
// chunk ids start over (not taken for late chunks of the old one).
TEST_F(TraceBufferTest, ForgottenGoneProducersIdStartsAFreshSequence) {
  Make(256);
  Copy(1, 100, {"old100"});
  Copy(1, 101, {"old101"});
  Copy(1, 1, {"other"}, 0, /*producer=*/2);
  tb_->MarkProducerGone(1);
  std::unordered_set<ProducerId> held;
  tb_->ForgetEmptyGoneSequences(&held);
  EXPECT_EQ(held, (std::unordered_set<ProducerId>{1, 2})) << "producer 1's chunks are unread";
  EXPECT_EQ(ReadMarked(), (Strings{"!old100", "old101", "!other"}));
  held.clear();
  tb_->ForgetEmptyGoneSequences(&held);
  EXPECT_EQ(held, (std::unordered_set<ProducerId>{2}));
  // Producer id 1 again, a new writer 1 starting at chunk id 0.
  Copy(1, 0, {"new0"});
  Copy(1, 1, {"new1"});
  EXPECT_EQ(ReadMarked(), (Strings{"!new0", "new1"}));
  EXPECT_EQ(tb_->stats().chunks_discarded, 0u);
  EXPECT_EQ(tb_->stats().chunks_committed_out_of_order, 0u);
}

TEST_F(TraceBufferTest, FirstChunkSeenNeedNotBeTheWritersFirst) {
  Make(4096);
  Copy(1, 5, {"c5"});
  Copy(1, 6, {"c6"});
  EXPECT_EQ(ReadMarked(), (Strings{"!c5", "c6"}));
}

TEST_F(TraceBufferTest, ContinuationAfterGapIsSkippedWithoutWriterLoss) {
  Make(4096);
  Copy(1, 1, {"p1", "p2:a"}, kLast);
  Copy(1, 3, {"p2?:c", "p4"}, kFirst);
  EXPECT_EQ(ReadMarked(), (Strings{"!p1"}));
  EXPECT_EQ(ReadMarked(ReadMode::kFinal), (Strings{"!p4"}));
  TraceBufferStats e = Expected();
  e.chunks_written = 2;
  e.bytes_written = Rec({"p1", "p2:a"}) + Rec({"p2?:c", "p4"});
  e.chunks_read = 2;
  e.bytes_read = e.bytes_written;
  e.readaheads_failed = 2;  // Incremental pass, then the final one gives up.
  ExpectStats(tb_->stats(), e);
}

// --- Fill policies and wrap-around. ---

TEST_F(TraceBufferTest, RingBufferOverwritesOldestWithExactStats) {
  const std::string big(100, 'x');  // 128-byte records.
  Make(1000);                        // 992 bytes: 7 records + 96 bytes of tail.
  for (uint32_t id = 1; id <= 7; id++) Copy(1, id, {big});
  TraceBufferStats e = Expected();
  e.chunks_written = 7;
  e.bytes_written = 7 * 128;
  ExpectStats(tb_->stats(), e);

  // 8 does not fit in the 96-byte tail: padding, wrap, overwrite 1 at 0.
  Copy(1, 8, {big});
  e.chunks_written = 8;
  e.bytes_written = 8 * 128;
  e.padding_bytes_written = 96;
  e.write_wrap_count = 1;
  e.chunks_overwritten = 1;
  e.bytes_overwritten = 128;
  ExpectStats(tb_->stats(), e);

  // 9..14 overwrite 2..7; 15 pads the tail again, clearing the old padding.
  for (uint32_t id = 9; id <= 15; id++) Copy(1, id, {big});
  e.chunks_written = 15;
  e.bytes_written = 15 * 128;
  e.chunks_overwritten = 8;
  e.bytes_overwritten = 8 * 128;
  e.padding_bytes_written = 192;
  e.padding_bytes_cleared = 96;
  e.write_wrap_count = 2;
  ExpectStats(tb_->stats(), e);

  // A 200-byte record over two 128-byte ones leaves 56 bytes of padding.
  const std::string bigger(180, 'y');
  ASSERT_EQ(Rec({bigger}), 208u);
  Copy(1, 16, {bigger});
  e.chunks_written = 16;
  e.bytes_written += 208;
  e.chunks_overwritten = 10;
  e.bytes_overwritten = 10 * 128;
  e.padding_bytes_written = 192 + 48;
  ExpectStats(tb_->stats(), e);

  std::vector<Packet> got = Read();
  ASSERT_EQ(got.size(), 6u);  // 11..15 and 16.
  EXPECT_TRUE(got[0].dropped);
  for (size_t i = 1; i < got.size(); i++) EXPECT_FALSE(got[i].dropped);
  EXPECT_EQ(got[5].data, bigger);
  e.chunks_read = 6;
  e.bytes_read = 5 * 128 + 208;
  ExpectStats(tb_->stats(), e);
}

TEST_F(TraceBufferTest, DiscardDropsNewChunksOnceFullAndForever) {
  const std::string big(100, 'x');
  Make(1024, Policy::kDiscard);
  for (uint32_t id = 1; id <= 8; id++) Copy(1, id, {big + std::to_string(id)});
  Copy(1, 9, {big});
  Copy(2, 1, {big});
  TraceBufferStats e = Expected();
  e.chunks_written = 8;
  e.bytes_written = 8 * 128;
  e.write_wrap_count = 1;  // The cursor reached the end exactly.
  e.chunks_discarded = 2;
  ExpectStats(tb_->stats(), e);
  EXPECT_EQ(Read().size(), 8u);
  Copy(1, 10, {big});  // Room now, but DISCARD does not resume.
  e.chunks_discarded = 3;
  e.chunks_read = 8;
  e.bytes_read = 8 * 128;
  ExpectStats(tb_->stats(), e);
  EXPECT_TRUE(Read().empty());
}

TEST_F(TraceBufferTest, DiscardReusesSpaceOfReadChunksUntilTheFirstDrop) {
  const std::string big(100, 'x');
  Make(1024, Policy::kDiscard);
  for (uint32_t id = 1; id <= 4; id++) Copy(1, id, {big});
  EXPECT_EQ(Read().size(), 4u);
  for (uint32_t id = 5; id <= 12; id++) Copy(1, id, {big});  // 9..12 reuse 1..4.
  EXPECT_EQ(tb_->stats().chunks_discarded, 0u);
  EXPECT_EQ(tb_->stats().chunks_overwritten, 0u);
  Copy(1, 13, {big});  // Would overwrite unread 5.
  EXPECT_EQ(tb_->stats().chunks_discarded, 1u);
  std::vector<Packet> got = Read();
  EXPECT_EQ(got.size(), 8u);
  for (const Packet& p : got) EXPECT_FALSE(p.dropped);
}

TEST_F(TraceBufferTest, DiscardStillTakesRecommitsAndPatches) {
  const std::string big(100, 'x');
  Make(1024, Policy::kDiscard);
  Copy(1, 1, {"a", "b", "partial"}, 0, 1, /*complete=*/false, /*pad_to=*/104);
  Copy(1, 2, {"c", "d:a"}, kLast | kPatch, 1, true, 104);
  for (uint32_t id = 1; id <= 6; id++) Copy(2, id, {big});
  Copy(2, 7, {big});  // Full.
  EXPECT_EQ(tb_->stats().chunks_discarded, 1u);
  Copy(1, 1, {"a", "b", "whole"}, 0, 1, true, 104);
  ChunkPatch patch;
  patch.offset = static_cast<uint32_t>(Frag("c").size() + 4);
  memcpy(patch.data, "D:A!", 4);
  EXPECT_TRUE(tb_->TryPatchChunkContents(1, 1, 2, &patch, 1, false));
  EXPECT_EQ(tb_->stats().chunks_rewritten, 1u);
  EXPECT_EQ(tb_->stats().patches_succeeded, 1u);
  Strings w1;
  for (const Packet& p : Read(ReadMode::kFinal))
    if (p.writer == 1) w1.push_back((p.dropped ? "!" : "") + p.data);
  // d's continuation never came: dropped at the final read.
  EXPECT_EQ(w1, (Strings{"!a", "b", "whole", "c"}));
}

// --- Patches. ---

TEST_F(TraceBufferTest, NeedsPatchingBlocksTheUnpatchedPacketUntilPatched) {
  Make(4096);
  Copy(1, 1, {"p1", "p2:a____"}, kLast | kPatch);
  Copy(1, 2, {"p2:b", "p3"}, kFirst);
  EXPECT_EQ(ReadMarked(), (Strings{"!p1"}));
  const uint32_t at = static_cast<uint32_t>(Frag("p1").size() + 4 + 4);  // "____"
  ChunkPatch patch;
  patch.offset = at;
  memcpy(patch.data, "XYZ_", 4);
  // More patches pending: still blocked.
  EXPECT_TRUE(tb_->TryPatchChunkContents(1, 1, 1, &patch, 1, /*other_patches_pending=*/true));
  EXPECT_TRUE(Read().empty());
  patch.offset = at - 1;
  memcpy(patch.data, "!XYZ", 4);
  EXPECT_TRUE(tb_->TryPatchChunkContents(1, 1, 1, &patch, 1, false));
  EXPECT_EQ(ReadMarked(), (Strings{"p2:!XYZ_p2:b", "p3"}));
  TraceBufferStats e = Expected();
  e.chunks_written = 2;
  e.bytes_written = Rec({"p1", "p2:a____"}) + Rec({"p2:b", "p3"});
  e.chunks_read = 2;
  e.bytes_read = e.bytes_written;
  e.patches_succeeded = 2;
  e.readaheads_succeeded = 1;
  ExpectStats(tb_->stats(), e);
}

TEST_F(TraceBufferTest, MiddlePieceAwaitingPatchesHoldsTheJoin) {
  Make(4096);
  Copy(1, 1, {"a"}, kLast);
  Copy(1, 2, {"b"}, kFirst | kLast | kPatch);
  Copy(1, 3, {"c"}, kFirst);
  EXPECT_TRUE(Read().empty());
  EXPECT_EQ(tb_->stats().readaheads_failed, 1u);
  EXPECT_TRUE(tb_->TryPatchChunkContents(1, 1, 2, nullptr, 0, false));
  EXPECT_EQ(ReadMarked(), (Strings{"!abc"}));
}

TEST_F(TraceBufferTest, PatchForMissingChunkOrOutOfBoundsFails) {
  Make(4096);
  Copy(1, 1, {"abcd"});
  Copy(1, 2, {"efgh"});
  ChunkPatch patches[2];
  patches[0].offset = 4;
  memcpy(patches[0].data, "WXYZ", 4);
  patches[1].offset = static_cast<uint32_t>(Frag("efgh").size()) - 3;  // 1 byte too far
  EXPECT_FALSE(tb_->TryPatchChunkContents(1, 1, 9, patches, 1, false));  // No such chunk.
  EXPECT_FALSE(tb_->TryPatchChunkContents(1, 7, 1, patches, 1, false));  // No such writer.
  EXPECT_FALSE(tb_->TryPatchChunkContents(1, 1, 2, patches, 2, false));  // All or none.
  EXPECT_EQ(ReadMarked(), (Strings{"!abcd", "efgh"}));
  EXPECT_FALSE(tb_->TryPatchChunkContents(1, 1, 1, patches, 1, false));  // Read: gone.
  TraceBufferStats e = Expected();
  e.chunks_written = 2;
  e.bytes_written = 2 * Rec({"abcd"});
  e.chunks_read = 2;
  e.bytes_read = e.bytes_written;
  e.patches_failed = 4;
  ExpectStats(tb_->stats(), e);
}

// A ring that overwrites a chunk still waiting for its patches loses the
// chunk, which chunks_overwritten counts; the patch that comes later finds
// nothing to patch, and that is not a second loss (a flight recorder's trace
// would otherwise show data loss for the mode at work). A patch for an
// overwritten chunk that asked for none is still a failure.
TEST_F(TraceBufferTest, APatchForAChunkTheRingOverwroteIsNoSecondLoss) {
  const std::string big(100, 'x');
  Make(1024);
  Copy(1, 1, {big, "h"}, kLast | kPatch);
  Copy(3, 1, {big});
  for (uint32_t id = 1; id <= 8; id++) Copy(2, id, {big});
  ChunkPatch patch;
  EXPECT_FALSE(tb_->TryPatchChunkContents(1, 1, 1, &patch, 1, false));
  EXPECT_EQ(tb_->stats().patches_failed, 0u);
  EXPECT_EQ(tb_->stats().chunks_overwritten, 2u);
  EXPECT_FALSE(tb_->TryPatchChunkContents(1, 3, 1, &patch, 1, false));
  EXPECT_EQ(tb_->stats().patches_failed, 1u);
}

TEST_F(TraceBufferTest, FinalReadDropsPacketsWhosePatchesNeverCame) {
  Make(4096);
  Copy(1, 1, {"p1", "p2:a"}, kLast | kPatch);
  Copy(1, 2, {"p2:b", "p3"}, kFirst);
  EXPECT_EQ(ReadMarked(), (Strings{"!p1"}));
  EXPECT_EQ(ReadMarked(ReadMode::kFinal), (Strings{"!p3"}));
  TraceBufferStats e = Expected();
  e.chunks_written = 2;
  e.bytes_written = Rec({"p1", "p2:a"}) + Rec({"p2:b", "p3"});
  e.chunks_read = 2;
  e.bytes_read = e.bytes_written;
  e.patches_failed = 1;
  ExpectStats(tb_->stats(), e);
}

TEST_F(TraceBufferTest, PatchThatBreaksFramingDropsTheRestOfTheChunk) {
  Make(4096);
  Copy(1, 1, {"p1", "p2", "p3"}, kPatch);
  ChunkPatch patch;
  patch.offset = static_cast<uint32_t>(Frag("p1").size());  // p2's size header
  memcpy(patch.data, "\xff\xff\xff\x7f", 4);
  EXPECT_TRUE(tb_->TryPatchChunkContents(1, 1, 1, &patch, 1, false));
  Copy(1, 2, {"p4"});
  EXPECT_EQ(ReadMarked(), (Strings{"!p1", "!p4"}));
  TraceBufferStats e = Expected();
  e.chunks_written = 2;
  e.bytes_written = Rec({"p1", "p2", "p3"}) + Rec({"p4"});
  e.chunks_read = 2;
  e.bytes_read = e.bytes_written;
  e.patches_succeeded = 1;
  e.abi_violations = 1;
  ExpectStats(tb_->stats(), e);
}

// --- Untrusted chunks. ---

struct Malformed {
  const char* name;
  uint16_t writer;
  uint16_t count;
  uint16_t flags;
  std::string payload;
  bool tombstone;  // Kept as a marker (a valid writer id).
  bool stored;     // Header fine: stored; the framing fails while it is read.
  Strings good;    // Fragments before the malformed one: read, as upstream.
};

TEST_F(TraceBufferTest, MalformedChunksAreDroppedAndCounted) {
  // A 1-byte size header (upstream's shortest form) past the payload's end.
  const std::string short_size_too_long = std::string("\x7f") + "abcd";
  std::string last_byte_continues = Frag("abcd");
  last_byte_continues[3] = static_cast<char>(0x80);
  std::string too_long = Frag("abcd");
  too_long.pop_back();
  const std::vector<Malformed> cases = {
      {"count beyond fragments", 1, 3, 0, Payload({"a", "b"}), true, true, {"a", "b"}},
      {"short size past payload end", 1, 1, 0, short_size_too_long, true, true, {}},
      {"varint never ends", 1, 1, 0, last_byte_continues, true, true, {}},
      {"size past payload end", 1, 1, 0, too_long, true, true, {}},
      {"header cut short", 1, 2, 0, Payload({"a"}) + "\x81\x80", true, true, {"a"}},
      {"count above 10 bits", 1, 1024, 0, Payload({"a"}), true, false, {}},
      {"continues without fragments", 1, 0, kFirst, "", true, false, {}},
      {"patching without fragments", 1, 0, kPatch, "", true, false, {}},
      {"too big for the ring", 1, 1, 0, Payload({std::string(5000, 'z')}), true, false, {}},
      {"writer 0", 0, 1, 0, Payload({"a"}), false, false, {}},
      {"writer above 1023", 1024, 1, 0, Payload({"a"}), false, false, {}},
  };
  for (const Malformed& m : cases) {
    SCOPED_TRACE(m.name);
    Make(4096);
    Copy(1, 1, {"before"});
    CopyRaw(m.writer, 2, m.count, m.flags, m.payload);
    if (m.tombstone) {
      // The dropped (part of) chunk 2 is a known loss: 3 is read at once, marked.
      Copy(1, 3, {"after"});
      Strings expected = {"!before"};
      expected.insert(expected.end(), m.good.begin(), m.good.end());
      expected.push_back("!after");
      EXPECT_EQ(ReadMarked(), expected);
    } else {
      // Not part of writer 1's sequence at all.
      Copy(1, 2, {"after"});
      EXPECT_EQ(ReadMarked(), (Strings{"!before", "after"}));
    }
    TraceBufferStats e = Expected();
    e.abi_violations = 1;
    e.chunks_written = 2;
    e.bytes_written = Rec({"before"}) + Rec({"after"});
    e.chunks_read = 2;
    e.bytes_read = e.bytes_written;
    if (m.stored) {  // Stored and read (up to its malformed fragment).
      e.chunks_written++;
      e.bytes_written += Rec(m.payload.size());
      e.chunks_read++;
      e.bytes_read = e.bytes_written;
    }
    ExpectStats(tb_->stats(), e);
    EXPECT_TRUE(tb_->CheckInvariantsForTesting());
  }
  Make(4096);
  tb_->CopyChunkUntrusted(1, 1001, 1, 1, 1, 0, nullptr, 12);
  EXPECT_EQ(tb_->stats().abi_violations, 1u);
}

TEST_F(TraceBufferTest, HostileChunkIdJumpsDoNotConfuseOverwrites) {
  const std::string big(100, 'x');
  Make(1024);
  // Each jump is within 2^31 of the newest id, so each is "newer"; after two
  // of them the first id would unwrap to a different place.
  Copy(1, 5, {big});
  Copy(1, 5 + 0x7fffffffu, {big});
  Copy(1, 5 + 0xfffffffeu, {big});
  Copy(1, 5, {big});  // Now "newer" again: a new chunk, not a recommit.
  for (uint32_t id = 1; id <= 8; id++) Copy(2, id, {big});  // 5..8 overwrite them.
  EXPECT_EQ(tb_->stats().chunks_overwritten, 4u);
  std::vector<Packet> got = Read();
  ASSERT_EQ(got.size(), 8u);
  for (const Packet& p : got) EXPECT_EQ(p.writer, 2);
}

TEST_F(TraceBufferTest, UnknownFlagBitsAreIgnored) {
  Make(4096);
  Copy(1, 1, {"a"}, 0x38);
  EXPECT_EQ(ReadMarked(), (Strings{"!a"}));
  EXPECT_EQ(tb_->stats().abi_violations, 0u);
}

TEST_F(TraceBufferTest, StoredCopyIsImmuneToLaterChangesOfTheSource) {
  Make(4096);
  std::string p = Payload({"stable"});
  tb_->CopyChunkUntrusted(1, 1001, 1, 1, 1, 0, reinterpret_cast<const uint8_t*>(p.data()),
                          p.size());
  p.assign(p.size(), '\xff');  // A hostile producer scribbles after the copy.
  EXPECT_EQ(ReadMarked(), (Strings{"!stable"}));
}

// --- Recommits (SMB scraping) and late chunks. ---

TEST_F(TraceBufferTest, IncompleteChunkIsReadUpToItsLastFragmentThenReplaced) {
  Make(4096);
  Copy(1, 1, {"a", "b", "par"}, 0, 1, /*complete=*/false, 64);
  Copy(1, 2, {"d"});
  EXPECT_EQ(ReadMarked(), (Strings{"!a", "b"}));
  EXPECT_EQ(tb_->stats().chunks_read, 0u);  // Waits for the complete copy.
  Copy(1, 1, {"a", "b", "partial"}, 0, 1, true, 40);
  EXPECT_EQ(ReadMarked(), (Strings{"partial", "d"}));
  TraceBufferStats e = Expected();
  e.chunks_written = 2;
  e.bytes_written = Rec(64) + Rec({"d"});
  e.chunks_rewritten = 1;
  e.chunks_read = 2;
  e.bytes_read = e.bytes_written;
  ExpectStats(tb_->stats(), e);
}

TEST_F(TraceBufferTest, IncompleteChunkIsReadAsIsOnTheFinalRead) {
  Make(4096);
  Copy(1, 1, {"a", "part"}, 0, 1, false);
  Copy(1, 2, {"b"});
  EXPECT_EQ(ReadMarked(), (Strings{"!a"}));
  EXPECT_EQ(ReadMarked(ReadMode::kFinal), (Strings{"!b"}));
  EXPECT_EQ(tb_->stats().chunks_read, 2u);
}

TEST_F(TraceBufferTest, RecommitRules) {
  Make(4096);
  Copy(1, 1, {"a", "b"});
  Copy(1, 1, {"x", "y"});  // A complete copy is final: ignored, counted.
  Copy(1, 2, {"c", "par"}, 0, 1, false);
  Copy(1, 2, {"c", "partial", "more", "than", "fits"});  // Larger than its record.
  Copy(1, 2, {"C", "p"});  // Differs, but nothing of it was read yet: replaces it.
  EXPECT_EQ(ReadMarked(), (Strings{"!a", "b", "C", "p"}));
  Copy(1, 3, {"e", "par"}, 0, 1, false, 32);
  EXPECT_EQ(ReadMarked(), (Strings{"e"}));
  Copy(1, 3, {"E", "f"}, 0, 1, true, 32);  // Changes a fragment already read.
  Copy(1, 3, {"e", "f"}, 0, 1, true, 32);
  EXPECT_EQ(ReadMarked(), (Strings{"f"}));
  EXPECT_EQ(tb_->stats().chunks_rewritten, 3u);
  EXPECT_EQ(tb_->stats().abi_violations, 2u);  // Too large; changed a read fragment.
}

TEST_F(TraceBufferTest, LateChunksAreDropped) {
  Make(4096);
  Copy(1, 1, {"a"});
  Copy(1, 2, {"b"});
  EXPECT_EQ(ReadMarked(), (Strings{"!a", "b"}));
  Copy(1, 1, {"a again"});  // Behind the reader: would break the order.
  Copy(1, 2, {"b again"});
  EXPECT_TRUE(Read().empty());
  TraceBufferStats e = Expected();
  e.chunks_written = 2;
  e.bytes_written = Rec({"a"}) + Rec({"b"});
  e.chunks_read = 2;
  e.bytes_read = e.bytes_written;
  e.chunks_discarded = 2;
  e.chunks_committed_out_of_order = 1;  // Only 1 is older than the newest (2).
  ExpectStats(tb_->stats(), e);
}

// --- Writer packet loss. ---

TEST_F(TraceBufferTest, BrokenFragmentChainsCountWriterPacketLoss) {
  Make(4096);
  Copy(1, 1, {"a", "lost:1"}, kLast);
  Copy(1, 2, {"b"});  // Should have continued "lost".
  Copy(1, 3, {"c"});
  Copy(1, 4, {"lost:2", "d"}, kFirst);  // 3 ended on a whole packet.
  Copy(1, 5, {"e", "lost:3"}, kLast);
  Copy(1, 6, {});  // An empty chunk cannot continue a packet.
  Copy(1, 7, {"f"});
  EXPECT_EQ(ReadMarked(), (Strings{"!a", "!b", "c", "!d", "e", "!f"}));
  TraceBufferStats e = Expected();
  e.chunks_written = 7;
  e.bytes_written = Rec({"a", "lost:1"}) + Rec({"b"}) + Rec({"c"}) + Rec({"lost:2", "d"}) +
                    Rec({"e", "lost:3"}) + Rec(0) + Rec({"f"});
  e.chunks_read = 7;
  e.bytes_read = e.bytes_written;
  e.trace_writer_packet_loss = 3;
  ExpectStats(tb_->stats(), e);
}

TEST_F(TraceBufferTest, TombstoneInAChainIsAViolationNotWriterLoss) {
  Make(4096);
  Copy(1, 1, {"a", "x:1"}, kLast);
  CopyRaw(1, 2, 1024, kFirst, Payload({"x:2"}));  // Count above 10 bits: dropped.
  Copy(1, 3, {"b"});
  EXPECT_EQ(ReadMarked(), (Strings{"!a", "!b"}));
  EXPECT_EQ(tb_->stats().abi_violations, 1u);
  EXPECT_EQ(tb_->stats().trace_writer_packet_loss, 0u);
}

// Upstream's writers put the shortest varint in a fragment's size header
// where they know the size up front (and the 4-byte redundant form where
// they patch it in later); its service reads either, and so does this one,
// in whole packets and across a join.
TEST_F(TraceBufferTest, ShortestFormSizeHeadersAreReadAsUpstreamWritesThem) {
  Make(4096);
  const std::string one_byte = std::string("\x05") + "hello";
  const std::string two_bytes = std::string("\x81\x01") + std::string(129, 'w');
  const std::string empty(1, '\0');  // A zero-length fragment.
  CopyRaw(1, 1, 4, kLast, one_byte + empty + two_bytes + std::string("\x03") + "x:1");
  CopyRaw(1, 2, 1, kFirst, std::string("\x03") + "x:2");
  EXPECT_EQ(ReadMarked(), (Strings{"!hello", std::string(129, 'w'), "x:1x:2"}));
  EXPECT_EQ(tb_->stats().abi_violations, 0u);
}

// Upstream's writers abandon a packet that spans chunks by putting the
// largest 4-byte size in its last fragment's header (out of SMB in drop
// mode): a packet lost by its writer, as upstream counts it, not a malformed
// chunk.
TEST_F(TraceBufferTest, AnAbandonedPacketIsWriterLossNotAViolation) {
  Make(4096);
  CopyRaw(1, 1, 2, 0, Frag("a") + std::string("\xff\xff\xff\x7f") + "x:1");
  Copy(1, 2, {"b"});
  EXPECT_EQ(ReadMarked(), (Strings{"!a", "!b"}));
  EXPECT_EQ(tb_->stats().abi_violations, 0u);
  EXPECT_EQ(tb_->stats().trace_writer_packet_loss, 1u);
}

TEST_F(TraceBufferTest, MalformedPieceBreaksTheJoinAndCountsOnce) {
  Make(4096);
  Copy(1, 1, {"a", "x:1"}, kLast);
  std::string bad = Frag("x:2");
  bad[3] = static_cast<char>(0x80);  // The size never ends.
  CopyRaw(1, 2, 2, kFirst, bad + Frag("c"));
  Copy(1, 3, {"d"});
  EXPECT_EQ(ReadMarked(), (Strings{"!a", "!d"}));  // c is behind the bad fragment.
  TraceBufferStats e = Expected();
  e.chunks_written = 3;
  e.bytes_written = Rec({"a", "x:1"}) + Rec(bad.size() + 5) + Rec({"d"});
  e.chunks_read = 3;
  e.bytes_read = e.bytes_written;
  e.abi_violations = 1;
  ExpectStats(tb_->stats(), e);
}

TEST_F(TraceBufferTest, CountThatLiesAfterAJoinedTailCountsOnce) {
  Make(4096);
  Copy(1, 1, {"a", "x:1"}, kLast);
  CopyRaw(1, 2, 2, kFirst, Payload({"x:2"}));  // Ends the packet, then lies.
  Copy(1, 3, {"b"});
  EXPECT_EQ(ReadMarked(), (Strings{"!a", "x:1x:2", "!b"}));
  EXPECT_EQ(tb_->stats().abi_violations, 1u);
  EXPECT_EQ(tb_->stats().readaheads_succeeded, 1u);
}

// --- Interleaving and larger workloads. ---

TEST_F(TraceBufferTest, CopiesMayInterleaveWithAReadPass) {
  Make(4096);
  Copy(1, 1, {"a", "b"});
  Copy(2, 1, {"x"});
  tb_->BeginRead();
  std::string packet;
  TraceBuffer::PacketSequenceProperties seq;
  bool dropped = false;
  ASSERT_TRUE(tb_->ReadNextTracePacket(&packet, &seq, &dropped));
  EXPECT_EQ(packet, "a");
  Copy(1, 2, {"c"});
  Copy(3, 1, {"new sequence"});
  Strings rest;
  while (tb_->ReadNextTracePacket(&packet, &seq, &dropped)) rest.push_back(packet);
  EXPECT_EQ(rest, (Strings{"b", "c", "x"}));
  EXPECT_EQ(ReadMarked(), (Strings{"!new sequence"}));
}

TEST_F(TraceBufferTest, HugePacketAcrossManyChunks) {
  Make(1 << 20);
  std::string packet;
  for (int i = 0; i < 5000; i++) packet += static_cast<char>('a' + i % 26);
  const size_t piece = 100;
  uint32_t id = 1;
  for (size_t off = 0; off < packet.size(); off += piece, id++) {
    uint16_t flags = 0;
    if (off > 0) flags |= kFirst;
    if (off + piece < packet.size()) flags |= kLast;
    Copy(1, id, {packet.substr(off, piece)}, flags);
  }
  EXPECT_EQ(ReadMarked(), (Strings{"!" + packet}));
  EXPECT_EQ(tb_->stats().chunks_read, 50u);
}

// A simulated TraceWriter: packets cut into chunks of a fixed payload size,
// with the flags a real writer sets; optionally needs-patching chunks.
struct SimWriter {
  uint16_t writer = 1;
  uint32_t next_id = 0;
  std::vector<std::string> written;
  struct Chunk {
    uint32_t id;
    uint16_t flags;
    std::vector<std::string> fragments;
  };
  std::vector<Chunk> Write(const std::vector<std::string>& packets, size_t payload) {
    std::vector<Chunk> out;
    Chunk cur{next_id++, 0, {}};
    size_t used = 0;
    for (const std::string& p : packets) {
      written.push_back(p);
      size_t off = 0;
      for (;;) {
        if (payload - used < 5) {  // No room for a header and a byte: next chunk.
          out.push_back(cur);
          cur = Chunk{next_id++, static_cast<uint16_t>(0), {}};
          used = 0;
        }
        const size_t room = payload - used - 4;
        const size_t n = std::min(room, p.size() - off);
        cur.fragments.push_back(p.substr(off, n));
        if (off > 0 && cur.fragments.size() == 1) cur.flags |= kFirst;
        used += 4 + n;
        off += n;
        if (off == p.size()) break;
        cur.flags |= kLast;
        out.push_back(cur);
        cur = Chunk{next_id++, 0, {}};
        used = 0;
      }
    }
    out.push_back(cur);
    return out;
  }
};

TEST_F(TraceBufferTest, RandomWritersRoundTripWithoutLoss) {
  std::mt19937 rng(42);
  Make(8 << 20);
  std::vector<SimWriter> writers(5);
  for (size_t w = 0; w < writers.size(); w++) {
    writers[w].writer = static_cast<uint16_t>(w + 1);
    writers[w].next_id = 0xfffffff0u;  // Cross the wrap.
  }
  std::map<uint16_t, Strings> got;
  auto drain = [&](ReadMode mode) {
    for (const Packet& p : Read(mode))
      if (!p.data.empty()) got[p.writer].push_back(p.data);
  };
  for (int round = 0; round < 200; round++) {
    SimWriter& w = writers[rng() % writers.size()];
    std::vector<std::string> packets;
    for (int i = 0, n = 1 + rng() % 8; i < n; i++) {
      size_t size = rng() % 4 == 0 ? rng() % 1500 : 1 + rng() % 120;
      std::string p(size, static_cast<char>('a' + rng() % 26));
      if (!p.empty()) p[0] = static_cast<char>(round);
      packets.push_back(p);
    }
    std::vector<SimWriter::Chunk> chunks = w.Write(packets, 284);
    // Commit with occasional adjacent swaps (out of order).
    for (size_t i = 0; i + 1 < chunks.size(); i++)
      if (rng() % 5 == 0) std::swap(chunks[i], chunks[i + 1]);
    for (const SimWriter::Chunk& c : chunks)
      Copy(w.writer, c.id, c.fragments, c.flags, 1, true, 284);
    if (rng() % 3 == 0) drain(ReadMode::kIncremental);
  }
  drain(ReadMode::kFinal);
  for (const SimWriter& w : writers) {
    Strings expected;
    for (const std::string& p : w.written)
      if (!p.empty()) expected.push_back(p);
    EXPECT_EQ(got[w.writer], expected) << "writer " << w.writer;
  }
  const TraceBufferStats& s = tb_->stats();
  EXPECT_EQ(s.chunks_read, s.chunks_written);
  EXPECT_EQ(s.chunks_overwritten + s.chunks_discarded + s.abi_violations +
                s.trace_writer_packet_loss + s.patches_failed,
            0u);
}

TEST_F(TraceBufferTest, RandomWritersInASmallRingKeepOrderAndMarkLosses) {
  std::mt19937 rng(7);
  Make(16 << 10);
  std::vector<SimWriter> writers(3);
  for (size_t w = 0; w < writers.size(); w++) writers[w].writer = static_cast<uint16_t>(w + 1);
  std::map<uint16_t, std::vector<Packet>> got;
  auto drain = [&](ReadMode mode) {
    for (const Packet& p : Read(mode)) got[p.writer].push_back(p);
  };
  uint32_t serial = 0;
  for (int round = 0; round < 400; round++) {
    SimWriter& w = writers[rng() % writers.size()];
    std::vector<std::string> packets;
    for (int i = 0, n = 1 + rng() % 6; i < n; i++) {
      std::string p = std::to_string(serial++) + ":";
      p.resize(p.size() + rng() % 700, 'p');
      packets.push_back(p);
    }
    for (const SimWriter::Chunk& c : w.Write(packets, 284))
      Copy(w.writer, c.id, c.fragments, c.flags, 1, true, 284);
    if (rng() % 8 == 0) drain(ReadMode::kIncremental);
  }
  drain(ReadMode::kFinal);
  for (const SimWriter& w : writers) {
    // What came out is what went in, in order, minus losses; every loss is
    // marked on the next packet out.
    const std::vector<Packet>& out = got[w.writer];
    size_t j = 0;
    for (size_t i = 0; i < out.size(); i++, j++) {
      const size_t before = j;
      while (j < w.written.size() && w.written[j] != out[i].data) j++;
      ASSERT_LT(j, w.written.size()) << "packet " << i << " of writer " << w.writer;
      if (j != before || i == 0) {
        EXPECT_TRUE(out[i].dropped) << out[i].data.substr(0, 8);
      }
    }
  }
  EXPECT_GT(tb_->stats().chunks_overwritten, 0u);
  EXPECT_EQ(tb_->stats().abi_violations, 0u);
  EXPECT_EQ(tb_->stats().trace_writer_packet_loss, 0u);
}

// --- Laps (see "Laps" in trace_buffer.h). ---

// Each chunk below is one fragment padded to a 128-byte record.
constexpr size_t kPad128 = 112;

TEST_F(TraceBufferTest, LapStaysShortWhileTheReaderKeepsUp) {
  Make(1 << 20, Policy::kRingBuffer, 1024);
  uint32_t id = 0;
  for (int round = 0; round < 100; round++) {
    Strings want;
    for (int i = 0; i < 5; i++) {
      want.push_back("c" + std::to_string(++id));
      Copy(1, id, {want.back()}, 0, 1, true, kPad128);
    }
    Strings got;
    for (const Packet& p : Read()) got.push_back(p.data);
    ASSERT_EQ(got, want) << "round " << round;
  }
  EXPECT_EQ(tb_->lap_size(), 1024u);
  EXPECT_LE(tb_->used_size(), 1024u);
  EXPECT_GT(tb_->stats().write_wrap_count, 50u);
  EXPECT_EQ(tb_->stats().chunks_overwritten, 0u);
}

TEST_F(TraceBufferTest, LapGrowsToTheRingBeforeAnythingIsOverwritten) {
  Make(8192, Policy::kRingBuffer, 1024);
  for (uint32_t id = 1; id <= 64; id++)
    Copy(1, id, {"c" + std::to_string(id)}, 0, 1, true, kPad128);
  // 64 records of 128 bytes fill the whole ring: nothing lost on the way.
  EXPECT_EQ(tb_->lap_size(), 8192u);
  EXPECT_EQ(tb_->stats().chunks_overwritten, 0u);
  EXPECT_EQ(tb_->stats().write_wrap_count, 1u);  // The cursor reached the ring's end.
  // From here it is a full ring: the 65th overwrites the oldest.
  Copy(1, 65, {"c65"}, 0, 1, true, kPad128);
  EXPECT_EQ(tb_->stats().chunks_overwritten, 1u);
  const Strings got = ReadMarked();
  ASSERT_EQ(got.size(), 64u);
  EXPECT_EQ(got.front(), "!c2");
  EXPECT_EQ(got.back(), "c65");
}

TEST_F(TraceBufferTest, DiscardGrowsTheLapBeforeItDiscards) {
  Make(8192, Policy::kDiscard, 1024);
  for (uint32_t id = 1; id <= 64; id++)
    Copy(1, id, {"c" + std::to_string(id)}, 0, 1, true, kPad128);
  EXPECT_EQ(tb_->stats().chunks_discarded, 0u);
  Copy(1, 65, {"c65"}, 0, 1, true, kPad128);
  EXPECT_EQ(tb_->stats().chunks_discarded, 1u);
  EXPECT_EQ(ReadMarked().size(), 64u);
}

// The lap grows while the cursor is in the middle of it: the records ahead
// (an unread chunk awaiting its patch, a fence holding a gap) move to the new
// end of the lap, and the patch, the gap and the reads find them there.
TEST_F(TraceBufferTest, LapGrowingMidLapMovesUnreadChunksAndFences) {
  Make(64 << 10, Policy::kRingBuffer, 1024);
  auto copy = [&](uint16_t writer, uint32_t id, const std::string& data, uint16_t flags = 0) {
    Copy(writer, id, {data}, flags, 1, true, kPad128);
  };
  // Writer 1 at 0-383, writer 3's c1 at 384, writer 2 at 512-1023, b1
  // awaiting a patch: the lap is full.
  copy(1, 1, "a1");
  copy(1, 2, "a2");
  copy(1, 3, "a3");
  copy(3, 1, "c1");
  copy(2, 1, "b1__", kPatch);
  for (uint32_t id = 2; id <= 4; id++) copy(2, id, "b" + std::to_string(id));
  EXPECT_EQ(ReadMarked(), (Strings{"!a1", "a2", "a3", "!c1"}));
  // c3 wraps to 0 (a1 was read); c2 is missing, so c1's record becomes the
  // fence that holds c3.
  copy(3, 3, "c3");
  EXPECT_TRUE(Read().empty());
  copy(1, 4, "a4");  // At 128 and 256, over the read a2, a3.
  copy(1, 5, "a5");
  EXPECT_EQ(tb_->lap_size(), 1024u);
  // At 384 is the fence: a full-size ring would not clear it yet.
  copy(1, 6, "a6");
  EXPECT_EQ(tb_->lap_size(), 2048u);
  EXPECT_EQ(tb_->stats().chunks_overwritten, 0u);
  auto clone = tb_->CloneReadOnly();
  ASSERT_NE(clone, nullptr);
  EXPECT_TRUE(clone->CheckInvariantsForTesting());

  ChunkPatch patch;
  patch.offset = 4;  // The fragment's first data byte.
  memcpy(patch.data, "B1!!", 4);
  EXPECT_TRUE(tb_->TryPatchChunkContents(1, 2, 1, &patch, 1, false));
  copy(3, 2, "c2");
  Strings w1, w2, w3;
  for (const Packet& p : Read()) {
    Strings& w = p.writer == 1 ? w1 : p.writer == 2 ? w2 : w3;
    w.push_back((p.dropped ? "!" : "") + p.data);
  }
  EXPECT_EQ(w1, (Strings{"a4", "a5", "a6"}));
  EXPECT_EQ(w2, (Strings{"!B1!!", "b2", "b3", "b4"}));
  EXPECT_EQ(w3, (Strings{"c2", "c3"}));
  EXPECT_EQ(tb_->stats().chunks_overwritten, 0u);
  EXPECT_EQ(tb_->stats().patches_succeeded, 1u);

  // The clone still holds what the buffer held when it was made: its final
  // read drops b1, which was never patched there, and releases c1's gap.
  TraceBuffer* live = tb_.release();
  tb_ = std::move(clone);
  EXPECT_EQ(ReadMarked(ReadMode::kFinal), (Strings{"a4", "a5", "a6", "!b2", "b3", "b4", "!c3"}));
  EXPECT_EQ(tb_->stats().patches_failed, 1u);
  tb_.reset(live);
}

// --- Clones (CloneReadOnly). ---

TEST_F(TraceBufferTest, CloneReadsWhatTheOriginalHoldsAndLeavesItUnread) {
  Make(4096);
  Copy(1, 1, {"a", "b"});
  Copy(1, 2, {"c", "long "}, kLast);   // "long " continues in chunk 3.
  Copy(1, 3, {"packet"}, kFirst);
  Copy(2, 1, {"x"});
  Copy(2, 2, {"y", "needs "}, kPatch);  // The last fragment waits for patches.
  Copy(3, 4, {"after a gap"});
  Copy(3, 6, {"held"});                 // 5 may still come.
  const TraceBufferStats before = tb_->stats();

  std::unique_ptr<TraceBuffer> clone = tb_->CloneReadOnly();
  ASSERT_NE(clone, nullptr);
  EXPECT_EQ(clone->size(), tb_->size());
  EXPECT_EQ(clone->fill_policy(), tb_->fill_policy());
  ASSERT_TRUE(clone->CheckInvariantsForTesting());
  ExpectStats(clone->stats(), before);

  // The clone is read as a snapshot: final, so nothing waits.
  std::swap(tb_, clone);
  EXPECT_EQ(ReadMarked(ReadMode::kFinal),
            (Strings{"!a", "b", "c", "long packet", "!x", "y", "!after a gap", "!held"}));
  EXPECT_TRUE(Read(ReadMode::kFinal).empty());
  std::swap(tb_, clone);
  ASSERT_TRUE(clone->CheckInvariantsForTesting());

  // The original did not move: same stats, everything still unread, the gap
  // and the unpatched fragment still held.
  ExpectStats(tb_->stats(), before);
  EXPECT_EQ(ReadMarked(), (Strings{"!a", "b", "c", "long packet", "!x", "y", "!after a gap"}));
  Copy(3, 5, {"filled"});
  EXPECT_EQ(ReadMarked(), (Strings{"filled", "held"}));
}

TEST_F(TraceBufferTest, CloneDoesNotSeeLaterWritesReadsOrOverwrites) {
  const std::string big(100, 'x');  // 128-byte records: 8 fill the ring.
  Make(1024);
  for (uint32_t id = 1; id <= 4; id++) Copy(1, id, {big + std::to_string(id)});
  std::unique_ptr<TraceBuffer> clone = tb_->CloneReadOnly();
  ASSERT_NE(clone, nullptr);
  // The original goes on: read, then wrap and overwrite what the clone holds.
  EXPECT_EQ(Read().size(), 4u);
  for (uint32_t id = 5; id <= 14; id++) Copy(1, id, {big + std::to_string(id)});
  EXPECT_GT(tb_->stats().write_wrap_count, 0u);

  std::swap(tb_, clone);
  Strings got;
  for (const Packet& p : Read(ReadMode::kFinal)) got.push_back(p.data.substr(100));
  EXPECT_EQ(got, (Strings{"1", "2", "3", "4"}));
  EXPECT_EQ(tb_->stats().chunks_read, 4u);
  EXPECT_EQ(tb_->stats().write_wrap_count, 0u);
  std::swap(tb_, clone);

  got.clear();
  for (const Packet& p : Read()) got.push_back(p.data.substr(100));
  EXPECT_EQ(got, (Strings{"7", "8", "9", "10", "11", "12", "13", "14"}));
}

TEST_F(TraceBufferTest, CloneOfAWrappedRingAfterAPartialReadStartsWhereTheReaderStopped) {
  const std::string big(100, 'x');
  Make(1024);
  for (uint32_t id = 1; id <= 11; id++) Copy(1, id, {big + std::to_string(id), "tail" + std::to_string(id)});
  ASSERT_GT(tb_->stats().chunks_overwritten, 0u);
  // An open pass that stopped inside the oldest chunk left: its first
  // fragment was emitted, its second not yet.
  tb_->BeginRead();
  std::string packet;
  TraceBuffer::PacketSequenceProperties seq;
  bool dropped = false;
  ASSERT_TRUE(tb_->ReadNextTracePacket(&packet, &seq, &dropped));
  const std::string first = packet.substr(100);
  std::unique_ptr<TraceBuffer> clone = tb_->CloneReadOnly();
  ASSERT_NE(clone, nullptr);
  ASSERT_TRUE(clone->CheckInvariantsForTesting());
  std::swap(tb_, clone);
  Strings from_clone;
  for (const Packet& p : Read(ReadMode::kFinal)) from_clone.push_back((p.dropped ? "!" : "") + p.data);
  std::swap(tb_, clone);
  // The original's pass goes on where it was, and gives what the clone gave.
  Strings from_original;
  while (tb_->ReadNextTracePacket(&packet, &seq, &dropped)) from_original.push_back((dropped ? "!" : "") + packet);
  ASSERT_FALSE(from_clone.empty());
  EXPECT_EQ(from_clone.front(), "tail" + first);
  EXPECT_EQ(from_clone.back(), "tail11");
  EXPECT_EQ(from_clone, from_original);
}

TEST_F(TraceBufferTest, CloneOfAFullDiscardBufferKeepsRefusingNewChunks) {
  const std::string big(100, 'x');
  Make(1024, Policy::kDiscard);
  for (uint32_t id = 1; id <= 9; id++) Copy(1, id, {big});
  ASSERT_EQ(tb_->stats().chunks_discarded, 1u);
  std::unique_ptr<TraceBuffer> clone = tb_->CloneReadOnly();
  ASSERT_NE(clone, nullptr);
  std::swap(tb_, clone);
  EXPECT_EQ(Read(ReadMode::kFinal).size(), 8u);
  Copy(2, 1, {"new"});  // The latch is copied: DISCARD drops it.
  EXPECT_EQ(tb_->stats().chunks_discarded, 2u);
  std::swap(tb_, clone);
  EXPECT_EQ(Read().size(), 8u);
}

TEST_F(TraceBufferTest, CloneIntoTakesOnlyAFreshBufferOfTheSameShape) {
  Make(4096);
  Copy(1, 1, {"a"});
  EXPECT_EQ(tb_->used_size(), Rec({"a"}));
  auto other_size = TraceBuffer::Create(8192, Policy::kRingBuffer);
  auto other_policy = TraceBuffer::Create(4096, Policy::kDiscard);
  auto used = TraceBuffer::Create(4096, Policy::kRingBuffer);
  used->CopyChunkUntrusted(1, 1001, 1, 1, 1, 0, reinterpret_cast<const uint8_t*>(Frag("b").data()), 5);
  EXPECT_FALSE(tb_->CloneInto(other_size.get()));
  EXPECT_FALSE(tb_->CloneInto(other_policy.get()));
  EXPECT_FALSE(tb_->CloneInto(used.get()));
  auto fresh = TraceBuffer::Create(4096, Policy::kRingBuffer);
  fresh->Prefault(fresh->size());  // Faulted in: still all Empty records.
  ASSERT_TRUE(fresh->CheckInvariantsForTesting());
  ASSERT_TRUE(tb_->CloneInto(fresh.get()));
  std::swap(tb_, fresh);
  EXPECT_EQ(ReadMarked(ReadMode::kFinal), (Strings{"!a"}));
  std::swap(tb_, fresh);
}

}  // namespace
}  // namespace sluice
