#include "shm/shm_abi.h"

#include <gtest/gtest.h>

#include <vector>

namespace sluice {
namespace {

class ShmAbiTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    page_size_ = GetParam();
    mem_.assign(page_size_ * 4 + 64, 0);
    // Page-aligned enough for the test: 64-byte alignment of the vector data.
    base_ = mem_.data() + (64 - reinterpret_cast<uintptr_t>(mem_.data()) % 64) % 64;
    abi_ = SharedMemoryAbi(base_, page_size_ * 4, page_size_);
  }
  uint32_t page_size_ = 0;
  std::vector<uint8_t> mem_;
  uint8_t* base_ = nullptr;
  SharedMemoryAbi abi_;
};

TEST_P(ShmAbiTest, ZeroMemoryIsAllFreeAndUnpartitioned) {
  ASSERT_EQ(abi_.num_pages(), 4u);
  for (uint32_t p = 0; p < 4; p++) {
    uint32_t h = abi_.LoadHeaderRelaxed(p);
    EXPECT_EQ(SharedMemoryAbi::LayoutOf(h), PageLayout::kNotPartitioned);
    EXPECT_EQ(SharedMemoryAbi::NumChunksOf(h), 0u);
  }
}

TEST_P(ShmAbiTest, EveryLayoutFullCycle) {
  for (uint32_t l = 1; l < kNumLayouts; l++) {
    PageLayout layout = static_cast<PageLayout>(l);
    uint32_t n = kChunksForLayout[l];
    uint32_t chunk_size = ChunkSizeFor(page_size_, layout);
    EXPECT_EQ(chunk_size % 4, 0u);
    EXPECT_LE(sizeof(PageHeader) + n * chunk_size, page_size_);
    ASSERT_TRUE(abi_.TryPartitionPage(1, layout));
    EXPECT_FALSE(abi_.TryPartitionPage(1, layout)) << "already partitioned";
    // Chunk 0 is BeingWritten; take the rest.
    for (uint32_t c = 1; c < n; c++) {
      uint32_t h = abi_.LoadHeaderRelaxed(1);
      ASSERT_EQ(SharedMemoryAbi::StateOf(h, c), ChunkState::kFree);
      ASSERT_TRUE(abi_.TryAcquireChunkForWriting(1, c, h));
      EXPECT_FALSE(abi_.TryAcquireChunkForWriting(1, c, abi_.LoadHeaderRelaxed(1)));
    }
    PageLayout read_layout;
    // Not complete yet: the service cannot take it.
    EXPECT_EQ(abi_.TryAcquireChunkForReading(1, 0, &read_layout),
              SharedMemoryAbi::AcquireResult::kNotComplete);
    for (uint32_t c = 0; c < n; c++) {
      abi_.MarkChunkComplete(1, c);
      EXPECT_EQ(SharedMemoryAbi::StateOf(abi_.LoadHeaderRelaxed(1), c), ChunkState::kComplete);
    }
    for (uint32_t c = 0; c < n; c++) {
      ASSERT_EQ(abi_.TryAcquireChunkForReading(1, c, &read_layout),
                SharedMemoryAbi::AcquireResult::kOk);
      EXPECT_EQ(read_layout, layout);
      EXPECT_EQ(abi_.TryAcquireChunkForReading(1, c, &read_layout),
                SharedMemoryAbi::AcquireResult::kNotComplete);
      EXPECT_EQ(SharedMemoryAbi::StateOf(abi_.LoadHeaderRelaxed(1), c), ChunkState::kBeingRead);
    }
    for (uint32_t c = 0; c < n; c++) abi_.ReleaseChunkAsFree(1, c);
    // The last free chunk returns the page to "not partitioned".
    EXPECT_EQ(abi_.LoadHeaderRelaxed(1), 0u) << "layout " << l;
  }
}

TEST_P(ShmAbiTest, ChunkAddressesDoNotOverlap) {
  for (uint32_t l = 1; l < kNumLayouts; l++) {
    PageLayout layout = static_cast<PageLayout>(l);
    uint32_t n = kChunksForLayout[l];
    for (uint32_t c = 0; c + 1 < n; c++) {
      EXPECT_EQ(abi_.chunk_begin(2, layout, c + 1) - abi_.chunk_begin(2, layout, c),
                ChunkSizeFor(page_size_, layout));
    }
    EXPECT_LE(abi_.chunk_begin(2, layout, n - 1) + ChunkSizeFor(page_size_, layout),
              base_ + 3 * page_size_);
  }
}

TEST_P(ShmAbiTest, ServiceRejectsBadIndicesAndStates) {
  PageLayout layout;
  EXPECT_EQ(abi_.TryAcquireChunkForReading(4, 0, &layout), SharedMemoryAbi::AcquireResult::kBadIndex);
  EXPECT_EQ(abi_.TryAcquireChunkForReading(0, 14, &layout), SharedMemoryAbi::AcquireResult::kBadIndex);
  // Unpartitioned page: no chunk exists.
  EXPECT_EQ(abi_.TryAcquireChunkForReading(0, 0, &layout), SharedMemoryAbi::AcquireResult::kBadIndex);
  ASSERT_TRUE(abi_.TryPartitionPage(0, PageLayout::kDiv2));
  EXPECT_EQ(abi_.TryAcquireChunkForReading(0, 2, &layout), SharedMemoryAbi::AcquireResult::kBadIndex);
  // Releasing a chunk that is not BeingRead changes nothing.
  uint32_t before = abi_.LoadHeaderRelaxed(0);
  abi_.ReleaseChunkAsFree(0, 0);
  abi_.ReleaseChunkAsFree(0, 1);
  abi_.ReleaseChunkAsFree(99, 0);
  EXPECT_EQ(abi_.LoadHeaderRelaxed(0), before);
}

TEST_P(ShmAbiTest, GarbageLayoutBitsAreRejected) {
  // A hostile producer writes layout 7 (invalid) with every state Complete.
  abi_.page_header(3)->header_bitmap.store(0x7u << 28 | 0x0fffffff);
  PageLayout layout;
  EXPECT_EQ(abi_.TryAcquireChunkForReading(3, 0, &layout), SharedMemoryAbi::AcquireResult::kBadIndex);
}

INSTANTIATE_TEST_SUITE_P(PageSizes, ShmAbiTest, ::testing::Values(4096u, 8192u, 32768u, 65536u));

TEST(ShmAbiStaticTest, PageSizeValidation) {
  EXPECT_TRUE(SharedMemoryAbi::IsValidPageSize(4096));
  EXPECT_TRUE(SharedMemoryAbi::IsValidPageSize(65536));
  EXPECT_FALSE(SharedMemoryAbi::IsValidPageSize(2048));
  EXPECT_FALSE(SharedMemoryAbi::IsValidPageSize(6000));
  EXPECT_FALSE(SharedMemoryAbi::IsValidPageSize(131072));
  EXPECT_EQ(SharedMemoryAbi(nullptr, 4096, 5000).num_pages(), 0u);
}

// A fragment's size header is a varint of at most 4 bytes: sluice writes
// the redundant 4-byte form, upstream's writers also the shortest one.
TEST(ShmAbiStaticTest, PacketSizeHeader) {
  uint32_t size = 0;
  const uint8_t redundant[4] = {0x85, 0x80, 0x80, 0x00};
  EXPECT_EQ(ReadPacketSizeUntrusted(redundant, 4, &size), 4u);
  EXPECT_EQ(size, 5u);
  const uint8_t shortest[4] = {0x05, 0x80, 0x80, 0x00};
  EXPECT_EQ(ReadPacketSizeUntrusted(shortest, 4, &size), 1u);
  EXPECT_EQ(size, 5u);
  const uint8_t two[2] = {0xb8, 0x05};
  EXPECT_EQ(ReadPacketSizeUntrusted(two, 2, &size), 2u);
  EXPECT_EQ(size, 0x2b8u);
  const uint8_t unterminated[4] = {0x85, 0x80, 0x80, 0x80};
  EXPECT_EQ(ReadPacketSizeUntrusted(unterminated, 4, &size), 0u);
  // Never past the bytes available.
  EXPECT_EQ(ReadPacketSizeUntrusted(redundant, 3, &size), 0u);
  EXPECT_EQ(ReadPacketSizeUntrusted(redundant, 0, &size), 0u);
  const uint8_t drop[4] = {0xff, 0xff, 0xff, 0x7f};
  EXPECT_EQ(ReadPacketSizeUntrusted(drop, 4, &size), 4u);
  EXPECT_EQ(size, kPacketSizeDropPacket);
}

}  // namespace
}  // namespace sluice
