#include "shm/base/shared_library.h"

#include <cstring>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(SharedLibraryTest, ResolvesAFunctionAndCallsIt) {
  StatusOr<SharedLibrary> zlib = SharedLibrary::Open("libz.so.1", "a test", "install zlib1g");
  ASSERT_TRUE(zlib.ok()) << zlib.status().message();
  const char* (*zlib_version)() = nullptr;
  Status resolved = zlib->Resolve("zlibVersion", &zlib_version);
  ASSERT_TRUE(resolved.ok()) << resolved.message();
  ASSERT_NE(zlib_version, nullptr);
  EXPECT_EQ(zlib_version()[0], '1');
}

TEST(SharedLibraryTest, ResolvesAVariable) {
  StatusOr<SharedLibrary> libc = SharedLibrary::Open("libc.so.6", "a test", "install libc6");
  ASSERT_TRUE(libc.ok()) << libc.status().message();
  char** invocation_name = nullptr;
  ASSERT_TRUE(libc->Resolve("program_invocation_name", &invocation_name).ok());
  ASSERT_NE(invocation_name, nullptr);
  EXPECT_NE(strstr(*invocation_name, "sluice_tests"), nullptr) << *invocation_name;
}

TEST(SharedLibraryTest, AMissingLibraryNamesTheFeatureTheFileAndTheFix) {
  StatusOr<SharedLibrary> missing =
      SharedLibrary::Open("libsluice-absent.so.9", "a feature", "install libsluice-absent9");
  ASSERT_FALSE(missing.ok());
  const std::string& message = missing.status().message();
  EXPECT_NE(message.find("a feature needs libsluice-absent.so.9"), std::string::npos) << message;
  EXPECT_NE(message.find("): install libsluice-absent9"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(SharedLibraryTest, AMissingSymbolNamesItAndTheFix) {
  StatusOr<SharedLibrary> zlib = SharedLibrary::Open("libz.so.1", "a test", "install zlib1g");
  ASSERT_TRUE(zlib.ok());
  void (*absent)() = nullptr;
  Status resolved = zlib->Resolve("sluice_absent_function", &absent);
  ASSERT_FALSE(resolved.ok());
  EXPECT_NE(resolved.message().find("libz.so.1 has no sluice_absent_function"), std::string::npos)
      << resolved.message();
  EXPECT_NE(resolved.message().find("not the version sluice was built with; install zlib1g"), std::string::npos)
      << resolved.message();
}

TEST(SharedLibraryTest, ResolveIntoKeepsTheFirstError) {
  StatusOr<SharedLibrary> zlib = SharedLibrary::Open("libz.so.1", "a test", "install zlib1g");
  ASSERT_TRUE(zlib.ok());
  Status status;
  const char* (*zlib_version)() = nullptr;
  void (*absent)() = nullptr;
  unsigned long (*crc32)(unsigned long, const unsigned char*, unsigned) = nullptr;
  zlib->ResolveInto("zlibVersion", &zlib_version, &status);
  EXPECT_TRUE(status.ok());
  zlib->ResolveInto("sluice_absent_function", &absent, &status);
  zlib->ResolveInto("crc32", &crc32, &status);  // Skipped: the table is bad already.
  EXPECT_NE(zlib_version, nullptr);
  EXPECT_EQ(crc32, nullptr);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("no sluice_absent_function"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace sluice
