#include "shm/base/heap_retention.h"

#include <malloc.h>

#include <memory>
#include <vector>

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(HeapRetentionTest, GlibcTakesTheSettings) {
  const bool taken = RetainFreedHeap();
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  // (The sanitizers' allocators have settings of their own.)
  EXPECT_TRUE(taken);
  // Blocks freed at the top of the heap stay in the process: more than
  // glibc's default trim threshold (128 KiB) is still there to reuse.
  std::vector<std::unique_ptr<char[]>> blocks;
  for (int i = 0; i < 256; i++) blocks.emplace_back(new char[16 << 10]);
  blocks.clear();
  EXPECT_GT(mallinfo2().fordblks, size_t{1} << 20);
#else
  (void)taken;
#endif
}

}  // namespace
}  // namespace sluice
