#include "user/cmd/libcurl.h"

#include "gtest/gtest.h"
#include "tests/child_process_test_util.h"
#include "tests/user/cmd/record_test_util.h"

namespace sluice {
namespace {

TEST(LibCurlTest, LoadsEveryFunctionOnce) {
  StatusOr<const LibCurl*> first = LoadLibCurl();
  ASSERT_TRUE(first.ok()) << first.status().message();
  const LibCurl& curl = *first.value();
  for (const void* function :
       {reinterpret_cast<const void*>(curl.global_init), reinterpret_cast<const void*>(curl.free),
        reinterpret_cast<const void*>(curl.url), reinterpret_cast<const void*>(curl.url_cleanup),
        reinterpret_cast<const void*>(curl.url_set), reinterpret_cast<const void*>(curl.url_get),
        reinterpret_cast<const void*>(curl.url_strerror), reinterpret_cast<const void*>(curl.easy_init),
        reinterpret_cast<const void*>(curl.easy_cleanup), reinterpret_cast<const void*>(curl.easy_reset),
        reinterpret_cast<const void*>(curl.easy_escape), reinterpret_cast<const void*>(curl.easy_setopt),
        reinterpret_cast<const void*>(curl.easy_perform), reinterpret_cast<const void*>(curl.easy_getinfo),
        reinterpret_cast<const void*>(curl.easy_strerror), reinterpret_cast<const void*>(curl.slist_append),
        reinterpret_cast<const void*>(curl.slist_free_all)}) {
    EXPECT_NE(function, nullptr);
  }
  StatusOr<const LibCurl*> again = LoadLibCurl();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.value(), first.value());
  CURL* handle = curl.easy_init();
  ASSERT_NE(handle, nullptr);
  curl.easy_cleanup(handle);
}

// What the loading on first use is for: `sluice` starts without libcurl,
// libedit and their dependencies (docs/PERFORMANCE.md, "Start-up"). The
// dynamic loader lists what it would map (what ldd prints).
TEST(LibCurlTest, SluiceStartsWithoutLibcurlOrLibedit) {
  const std::string dir = testing::MakeTempDir("sluice_libcurl_test_");
  const testing::CommandResult listed = testing::RunToCompletion(
      {"/usr/bin/env", "LD_TRACE_LOADED_OBJECTS=1", testing::SluiceBinDir() + "/sluice"}, dir);
  testing::RemoveTempDir(dir);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("libprotobuf"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("libcurl"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("libedit"), std::string::npos) << listed.out;
}

}  // namespace
}  // namespace sluice
