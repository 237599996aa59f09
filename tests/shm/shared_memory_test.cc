#include "shm/shared_memory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace sluice {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

// What was written, by system page: the rest are holes, which the service's
// scrape does not read (reading would allocate them).
TEST(SharedMemoryTest, WrittenRangesAreThePagesEverWritten) {
  const uint32_t page = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
  auto shm = SharedMemory::Create(16 * page);
  ASSERT_TRUE(shm.ok()) << shm.status().message();
  EXPECT_EQ((*shm)->WrittenRanges(), Ranges{});
  (*shm)->start()[3 * page + 10] = 1;
  (*shm)->start()[4 * page] = 1;
  (*shm)->start()[15 * page + page - 1] = 1;
  EXPECT_EQ((*shm)->WrittenRanges(), (Ranges{{3 * page, 5 * page}, {15 * page, 16 * page}}));
  // Reads through the mapping of a hole are zeros (and allocate: the reason
  // to ask first).
  EXPECT_EQ((*shm)->start()[8 * page], 0);
  struct stat st;
  ASSERT_EQ(fstat((*shm)->fd(), &st), 0);
  EXPECT_LE(static_cast<uint64_t>(st.st_blocks) * 512, 4ull * page);
}

// The SMB's pages may be larger than the system's (a 16 KiB SMB page here):
// a page counts once its first system page was written, as its header lives
// there; one written only past its start was never set up and holds no chunk.
TEST(SharedMemoryTest, PagesEverWrittenAreTheSmbPagesWithAWrittenStart) {
  const uint32_t page = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
  const uint32_t smb_page = 4 * page;
  auto shm = SharedMemory::Create(8 * smb_page);
  ASSERT_TRUE(shm.ok()) << shm.status().message();
  EXPECT_EQ((*shm)->PagesEverWritten(smb_page, 8), std::vector<uint32_t>{});
  (*shm)->start()[2 * smb_page] = 1;          // SMB page 2's header.
  (*shm)->start()[5 * smb_page + page] = 1;   // Inside SMB page 5, not its header.
  (*shm)->start()[7 * smb_page + 8] = 1;      // SMB page 7's header.
  EXPECT_EQ((*shm)->PagesEverWritten(smb_page, 8), (std::vector<uint32_t>{2, 7}));
  EXPECT_EQ((*shm)->PagesEverWritten(0, 8), std::vector<uint32_t>{});
}

}  // namespace
}  // namespace sluice
