#include "service/ipc/ipc_frame.h"

#include <string>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(IpcFrameTest, RoundTripAcrossArbitrarySplits) {
  std::string stream;
  AppendFrame("hello", &stream);
  AppendFrame(std::string(100000, 'x'), &stream);
  AppendFrame("z", &stream);
  for (size_t step : {1u, 3u, 4u, 7u, 4096u, 1u << 20}) {
    FrameReader reader;
    std::vector<std::string> frames;
    for (size_t off = 0; off < stream.size(); off += step) {
      size_t n = std::min(step, stream.size() - off);
      reader.Append(reinterpret_cast<const uint8_t*>(stream.data() + off), n);
      std::string_view f;
      FrameReader::Result r;
      while ((r = reader.NextFrame(&f)) == FrameReader::Result::kFrame) frames.emplace_back(f);
      ASSERT_EQ(r, FrameReader::Result::kNeedMore);
    }
    ASSERT_EQ(frames.size(), 3u) << "step " << step;
    EXPECT_EQ(frames[0], "hello");
    EXPECT_EQ(frames[1].size(), 100000u);
    EXPECT_EQ(frames[2], "z");
    EXPECT_EQ(reader.buffered_bytes(), 0u);
  }
}

TEST(IpcFrameTest, LengthIsLittleEndian) {
  std::string stream;
  AppendFrame(std::string(0x0102, 'a'), &stream);
  EXPECT_EQ(static_cast<uint8_t>(stream[0]), 0x02);
  EXPECT_EQ(static_cast<uint8_t>(stream[1]), 0x01);
  EXPECT_EQ(stream[2], 0);
  EXPECT_EQ(stream[3], 0);
}

TEST(IpcFrameTest, OversizeAndZeroLengthBreakTheStream) {
  for (uint32_t len : {0u, kMaxFrameSize + 1, 0xffffffffu}) {
    FrameReader reader;
    uint8_t header[4] = {static_cast<uint8_t>(len), static_cast<uint8_t>(len >> 8),
                         static_cast<uint8_t>(len >> 16), static_cast<uint8_t>(len >> 24)};
    reader.Append(header, 4);
    std::string_view f;
    EXPECT_EQ(reader.NextFrame(&f), FrameReader::Result::kError) << len;
    EXPECT_TRUE(reader.broken());
    // Sticky: nothing after a bad length is trusted.
    std::string more;
    AppendFrame("ok", &more);
    reader.Append(reinterpret_cast<const uint8_t*>(more.data()), more.size());
    EXPECT_EQ(reader.NextFrame(&f), FrameReader::Result::kError);
  }
}

TEST(IpcFrameTest, MaxSizeFrameIsAccepted) {
  FrameReader reader(64);
  std::string stream;
  AppendFrame(std::string(64, 'm'), &stream);
  reader.Append(reinterpret_cast<const uint8_t*>(stream.data()), stream.size());
  std::string_view f;
  ASSERT_EQ(reader.NextFrame(&f), FrameReader::Result::kFrame);
  EXPECT_EQ(f.size(), 64u);
}

}  // namespace
}  // namespace sluice
