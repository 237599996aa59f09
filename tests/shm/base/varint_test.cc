#include "shm/base/varint.h"

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(VarIntTest, RoundTrip) {
  for (uint64_t v : std::initializer_list<uint64_t>{0, 1, 127, 128, 300, 1ull << 35, UINT64_MAX}) {
    std::string bytes;
    AppendVarInt(v, &bytes);
    EXPECT_EQ(bytes.size(), VarIntSize(v));
    size_t pos = 0;
    uint64_t back = 0;
    ASSERT_TRUE(ReadVarInt(bytes, &pos, &back));
    EXPECT_EQ(back, v);
    EXPECT_EQ(pos, bytes.size());
  }
  EXPECT_EQ(VarIntSize(UINT64_MAX), kMaxVarIntSize);
}

TEST(VarIntTest, RejectsCutAndOverlong) {
  uint64_t v = 0;
  size_t pos = 0;
  EXPECT_FALSE(ReadVarInt(std::string("\x80\x80", 2), &pos, &v));
  pos = 0;
  EXPECT_FALSE(ReadVarInt(std::string(11, '\x80') + '\x01', &pos, &v));
  pos = 5;
  EXPECT_FALSE(ReadVarInt(std::string("\x01"), &pos, &v));
}

TEST(VarIntTest, TracePacketRecord) {
  std::string out;
  AppendTracePacketRecord(std::string(200, 'a'), &out);
  ASSERT_EQ(out.size(), TracePacketRecordSize(200));
  EXPECT_EQ(static_cast<uint8_t>(out[0]), kTracePacketTag);
  EXPECT_EQ(static_cast<uint8_t>(out[1]), 0xc8);  // 200 = 0x48 | 0x80, then 0x01.
  EXPECT_EQ(static_cast<uint8_t>(out[2]), 0x01);
}

}  // namespace
}  // namespace sluice
