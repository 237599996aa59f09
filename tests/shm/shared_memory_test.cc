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

}  // namespace
}  // namespace sluice
