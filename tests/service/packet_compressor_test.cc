#include "service/packet_compressor.h"

#include <zstd.h>

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "perfetto/config/trace_config.pb.h"
#include "perfetto/trace/trace.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "shm/base/varint.h"
#include "user/trace/trace_file_reader.h"

namespace sluice {
namespace {

using perfetto::protos::TraceConfig;

// A TracePacket of about `size` bytes: repetitive (compresses well) or
// random (does not).
std::string Packet(size_t size, uint32_t seed, bool random = false) {
  perfetto::protos::TracePacket p;
  p.set_timestamp(seed);
  std::string payload(size, 'a' + static_cast<char>(seed % 26));
  if (random) {
    std::mt19937 rng(seed);
    for (char& c : payload) c = static_cast<char>(rng());
  }
  p.set_synchronization_marker(payload);
  return p.SerializeAsString();
}

std::vector<std::string> ReadBack(std::string_view bytes, TraceFileSummary* summary = nullptr) {
  std::vector<std::string> got;
  TraceFileSummary s;
  Status st = ReadTraceBytes(bytes, [&](std::string_view p) { got.emplace_back(p); }, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_FALSE(s.truncated);
  if (summary) *summary = s;
  return got;
}

class PacketCompressorCodecTest : public ::testing::TestWithParam<TraceCodec> {};

TEST_P(PacketCompressorCodecTest, RoundTripInOrder) {
  auto c = PacketCompressor::Create({GetParam(), 0});
  ASSERT_TRUE(c.ok()) << c.status().message();
  std::vector<std::string> packets = {"", Packet(10, 1), Packet(3000, 2), Packet(200, 3, true)};
  for (const auto& p : packets) ASSERT_TRUE((*c)->Add(p).ok());
  EXPECT_EQ((*c)->packets(), 4u);
  uint64_t raw = 0;
  for (const auto& p : packets) raw += TracePacketRecordSize(p.size());
  EXPECT_EQ((*c)->input_bytes(), raw);
  auto record = (*c)->Finish();
  ASSERT_TRUE(record.ok());
  EXPECT_TRUE((*c)->empty());
  // One record, one container packet holding only its one field.
  perfetto::protos::Trace trace;
  ASSERT_TRUE(trace.ParseFromArray(record->data(), static_cast<int>(record->size())));
  ASSERT_EQ(trace.packet_size(), 1);
  const auto& container = trace.packet(0);
  if (GetParam() == TraceCodec::kZstd) {
    ASSERT_TRUE(container.has_zstd_compressed_packets());
    const std::string& frame = container.zstd_compressed_packets();
    // Exactly one zstd frame, nothing after it.
    EXPECT_EQ(ZSTD_findFrameCompressedSize(frame.data(), frame.size()), frame.size());
  } else {
    ASSERT_TRUE(container.has_compressed_packets());
  }
  EXPECT_EQ(container.ByteSizeLong(), container.has_zstd_compressed_packets()
                                          ? 2 + VarIntSize(container.zstd_compressed_packets().size()) +
                                                container.zstd_compressed_packets().size()
                                          : 2 + VarIntSize(container.compressed_packets().size()) +
                                                container.compressed_packets().size());
  TraceFileSummary s;
  EXPECT_EQ(ReadBack(*record, &s), packets);
  EXPECT_EQ(s.compressed_containers, 1u);
  // Finish with nothing open: nothing.
  auto empty = (*c)->Finish();
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

// Containers one after another reuse the context and the output buffer: each
// is a frame of its own, and the buffer does not move (no allocation).
TEST_P(PacketCompressorCodecTest, ContainersReuseTheBuffer) {
  auto c = PacketCompressor::Create({GetParam(), 0});
  ASSERT_TRUE(c.ok());
  std::string file;
  std::vector<std::string> all;
  const char* buffer_end = nullptr;
  for (uint32_t round = 0; round < 5; round++) {
    for (uint32_t i = 0; i < 50; i++) {
      all.push_back(Packet(1000 + i, round * 100 + i, i % 3 == 0));
      ASSERT_TRUE((*c)->Fits(TracePacketRecordSize(all.back().size())));
      ASSERT_TRUE((*c)->Add(all.back()).ok());
    }
    auto record = (*c)->Finish();
    ASSERT_TRUE(record.ok());
    // The record ends where the compressed bytes end; the buffer starts at
    // the same place each time, so its header is right-aligned at a fixed
    // point: compare the start of the compressed data instead.
    if (round == 0) buffer_end = record->data();
    EXPECT_LT(std::abs(record->data() - buffer_end), 16) << "the output buffer moved";
    file += *record;
  }
  TraceFileSummary s;
  EXPECT_EQ(ReadBack(file, &s), all);
  EXPECT_EQ(s.compressed_containers, 5u);
}

// Up to kMaxInputBytes of records per container: even random (incompressible)
// data stays under upstream's 512 KiB per compressed packet.
TEST_P(PacketCompressorCodecTest, FullContainerOfRandomDataStaysUnder512KiB) {
  auto c = PacketCompressor::Create({GetParam(), 0});
  ASSERT_TRUE(c.ok());
  std::vector<std::string> packets;
  std::string file;
  size_t containers = 0;
  for (uint32_t i = 0; i < 300; i++) {
    packets.push_back(Packet(4000, i, true));
    const size_t record = TracePacketRecordSize(packets.back().size());
    if (!(*c)->Fits(record)) {
      EXPECT_LE((*c)->input_bytes() + record, PacketCompressor::kMaxInputBytes + record);
      auto out = (*c)->Finish();
      ASSERT_TRUE(out.ok());
      EXPECT_LT(out->size(), 512u * 1024) << "container " << containers;
      EXPECT_GT(out->size(), PacketCompressor::kMaxInputBytes - 5000);
      file += *out;
      containers++;
    }
    ASSERT_TRUE((*c)->Add(packets.back()).ok());
  }
  auto out = (*c)->Finish();
  ASSERT_TRUE(out.ok());
  file += *out;
  EXPECT_GE(containers, 2u);
  EXPECT_EQ(ReadBack(file), packets);
}

// One packet larger than a container goes alone; the buffer grows for it.
TEST_P(PacketCompressorCodecTest, PacketLargerThanAContainerGoesAlone) {
  auto c = PacketCompressor::Create({GetParam(), 0});
  ASSERT_TRUE(c.ok());
  const std::string big = Packet(2 * PacketCompressor::kMaxInputBytes, 7, true);
  EXPECT_TRUE((*c)->Fits(TracePacketRecordSize(big.size())));  // Empty: anything fits.
  ASSERT_TRUE((*c)->Add(big).ok());
  EXPECT_FALSE((*c)->Fits(10));
  auto out = (*c)->Finish();
  ASSERT_TRUE(out.ok());
  std::string file(*out);
  ASSERT_TRUE((*c)->Add(Packet(10, 8)).ok());
  out = (*c)->Finish();
  ASSERT_TRUE(out.ok());
  file += *out;
  EXPECT_EQ(ReadBack(file), (std::vector<std::string>{big, Packet(10, 8)}));
}

TEST_P(PacketCompressorCodecTest, DiscardDropsTheOpenContainer) {
  auto c = PacketCompressor::Create({GetParam(), 0});
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->Add(Packet(100, 1)).ok());
  (*c)->Discard();
  EXPECT_TRUE((*c)->empty());
  EXPECT_EQ((*c)->input_bytes(), 0u);
  ASSERT_TRUE((*c)->Add(Packet(100, 2)).ok());
  auto out = (*c)->Finish();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(ReadBack(*out), (std::vector<std::string>{Packet(100, 2)}));
}

INSTANTIATE_TEST_SUITE_P(Codecs, PacketCompressorCodecTest,
                         ::testing::Values(TraceCodec::kZstd, TraceCodec::kDeflate),
                         [](const auto& info) { return info.param == TraceCodec::kZstd ? "Zstd" : "Deflate"; });

TEST(PacketCompressorTest, ZstdLevelsChangeTheSize) {
  std::vector<std::string> packets;
  for (uint32_t i = 0; i < 200; i++) packets.push_back(Packet(500 + i % 37, i % 7) + Packet(50, i, true));
  auto size_at = [&](int level) {
    auto c = PacketCompressor::Create({TraceCodec::kZstd, level});
    EXPECT_TRUE(c.ok());
    for (const auto& p : packets) EXPECT_TRUE((*c)->Add(p).ok());
    auto out = (*c)->Finish();
    EXPECT_TRUE(out.ok());
    EXPECT_EQ(ReadBack(*out), packets);
    return out->size();
  };
  EXPECT_LT(size_at(19), size_at(-5));
}

TEST(PacketCompressorTest, CompressionOfTheConfig) {
  TraceConfig config;
  EXPECT_EQ(TraceCompressionOf(config), TraceCompression{});
  config.set_compression_type(TraceConfig::COMPRESSION_TYPE_DEFLATE);
  EXPECT_EQ(TraceCompressionOf(config), (TraceCompression{TraceCodec::kDeflate, 0}));
  config.mutable_compression()->mutable_deflate();
  EXPECT_EQ(TraceCompressionOf(config).codec, TraceCodec::kDeflate);
  // Both set: the highest-numbered codec (zstd) wins.
  config.mutable_compression()->mutable_zstd()->set_level(9);
  EXPECT_EQ(TraceCompressionOf(config), (TraceCompression{TraceCodec::kZstd, 9}));
  // A codec sluice does not know (a later field of CompressionConfig), alone:
  // ignored, as upstream ignores it.
  TraceConfig future;
  future.mutable_compression()->GetReflection()->MutableUnknownFields(future.mutable_compression())->AddLengthDelimited(3, "");
  EXPECT_EQ(TraceCompressionOf(future), TraceCompression{});

  TraceConfig set;
  set.set_compression_type(TraceConfig::COMPRESSION_TYPE_DEFLATE);
  SetTraceCompression({TraceCodec::kZstd, 0}, &set);
  EXPECT_FALSE(set.has_compression_type());
  EXPECT_TRUE(set.compression().has_zstd());
  EXPECT_FALSE(set.compression().zstd().has_level());
  SetTraceCompression({TraceCodec::kNone, 0}, &set);
  EXPECT_FALSE(set.has_compression());
}

TEST(PacketCompressorTest, ParseAndDescribe) {
  EXPECT_EQ(ParseTraceCompression("zstd").value(), (TraceCompression{TraceCodec::kZstd, 0}));
  EXPECT_EQ(ParseTraceCompression("zstd:19").value(), (TraceCompression{TraceCodec::kZstd, 19}));
  EXPECT_EQ(ParseTraceCompression("zstd:-3").value(), (TraceCompression{TraceCodec::kZstd, -3}));
  EXPECT_EQ(ParseTraceCompression("deflate").value(), (TraceCompression{TraceCodec::kDeflate, 0}));
  EXPECT_EQ(ParseTraceCompression("none").value(), TraceCompression{});
  for (const char* bad : {"zstd:", "zstd:x", "zstd:23", "zstd:0", "gzip", "", "zstd:3x"}) {
    auto r = ParseTraceCompression(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_NE(ParseTraceCompression("gzip").status().message().find("give zstd, zstd:LEVEL"), std::string::npos);
  EXPECT_EQ(DescribeTraceCompression({TraceCodec::kZstd, 0}), "zstd (level 3)");
  EXPECT_EQ(DescribeTraceCompression({TraceCodec::kZstd, 19}), "zstd (level 19)");
  EXPECT_EQ(DescribeTraceCompression({TraceCodec::kDeflate, 0}), "deflate");
  EXPECT_EQ(DescribeTraceCompression({}), "none");
}

}  // namespace
}  // namespace sluice
