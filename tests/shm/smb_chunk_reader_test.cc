#include "shm/smb_chunk_reader.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "shm/shared_memory.h"

namespace sluice {
namespace {

constexpr uint32_t kPage = 4096;

// An SMB of four pages whose page 1 holds one Complete chunk (kDiv1): writer
// 3, two packets of 5 and 300 bytes, each behind the 4-byte size header
// writers reserve.
class SmbChunkReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto shm = SharedMemory::Create(4 * kPage);
    ASSERT_TRUE(shm.ok()) << shm.status().message();
    shm_ = std::move(shm.value());
    abi_ = SharedMemoryAbi(shm_->start(), shm_->size(), kPage);
    ASSERT_TRUE(abi_.TryPartitionPage(1, PageLayout::kDiv1));
    uint8_t* chunk = abi_.chunk_begin(1, PageLayout::kDiv1, 0);
    ChunkHeader header{};
    header.chunk_id = 7;
    header.writer_id = 3;
    header.packets = ChunkHeader::PackPackets(2, 0);
    memcpy(chunk, &header, sizeof(header));
    uint8_t* at = chunk + sizeof(header);
    for (uint32_t size : {5u, 300u}) {
      const uint8_t size_header[4] = {static_cast<uint8_t>(0x80 | (size & 0x7f)),
                                      static_cast<uint8_t>(0x80 | ((size >> 7) & 0x7f)), 0x80, 0};
      memcpy(at, size_header, sizeof(size_header));
      memset(at + sizeof(size_header), static_cast<int>(size), size);
      at += sizeof(size_header) + size;
    }
    abi_.MarkChunkComplete(1, 0);
    expected_.assign(chunk, chunk + ChunkSizeFor(kPage, PageLayout::kDiv1));
  }

  // Reads the chunk with `memfd` and checks the copy, the validation and
  // that the chunk went back to Free.
  void ReadAndCheck(int memfd) {
    std::vector<uint8_t> copy(kPage, 0xee);
    ChunkCopy out;
    ASSERT_EQ(ReadChunkUntrusted(&abi_, 1, 0, copy.data(), kPage, &out, memfd), ChunkReadResult::kOk);
    copy.resize(expected_.size());
    EXPECT_EQ(copy, expected_);
    EXPECT_EQ(out.header.writer_id, 3u);
    EXPECT_EQ(out.header.chunk_id, 7u);
    EXPECT_EQ(out.used_payload_size, 4u + 5u + 4u + 300u);
    EXPECT_EQ(abi_.LoadHeaderRelaxed(1), 0u) << "the page's only chunk is free again";
  }

  std::unique_ptr<SharedMemory> shm_;
  SharedMemoryAbi abi_;
  std::vector<uint8_t> expected_;
};

TEST_F(SmbChunkReaderTest, CopiesOutOfTheMapping) { ReadAndCheck(-1); }

TEST_F(SmbChunkReaderTest, CopiesByPreadOfTheMemfd) { ReadAndCheck(shm_->fd()); }

// A file that does not hold the SMB's bytes (here: empty, so every read
// comes up short) leaves the copy to the mapping, never a partial chunk.
TEST_F(SmbChunkReaderTest, AShortPreadFallsBackToTheMapping) {
  const int empty = memfd_create("smb-chunk-reader-test", MFD_CLOEXEC);
  ASSERT_GE(empty, 0);
  ReadAndCheck(empty);
  close(empty);
}

// A chunk still being written is not read, by pread either.
TEST_F(SmbChunkReaderTest, AChunkBeingWrittenIsLeftAlone) {
  ASSERT_TRUE(abi_.TryPartitionPage(2, PageLayout::kDiv1));  // Chunk 0: BeingWritten.
  const uint32_t before = abi_.LoadHeaderRelaxed(2);
  std::vector<uint8_t> copy(kPage);
  ChunkCopy out;
  EXPECT_EQ(ReadChunkUntrusted(&abi_, 2, 0, copy.data(), kPage, &out, shm_->fd()),
            ChunkReadResult::kNotComplete);
  EXPECT_EQ(abi_.LoadHeaderRelaxed(2), before);
}

}  // namespace
}  // namespace sluice
