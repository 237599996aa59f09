#include "shm/base/cpu_list.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(CpuListTest, Parse) {
  auto cpus = ParseCpuList("0-3,5,7-8\n");
  ASSERT_TRUE(cpus.ok());
  EXPECT_EQ(*cpus, (std::vector<uint32_t>{0, 1, 2, 3, 5, 7, 8}));
  EXPECT_EQ(*ParseCpuList("0\n"), (std::vector<uint32_t>{0}));
  EXPECT_TRUE(ParseCpuList("\n")->empty());
  EXPECT_FALSE(ParseCpuList("3-1").ok());
  EXPECT_FALSE(ParseCpuList("a").ok());
  EXPECT_FALSE(ParseCpuList("0-").ok());
  EXPECT_FALSE(ParseCpuList("0-100000").ok());
}

TEST(CpuListTest, ParseRejectsWhatSscanfAccepted) {
  // The old BPF loader's sscanf("%u-%u") took these silently.
  EXPECT_FALSE(ParseCpuList("1x").ok());
  EXPECT_FALSE(ParseCpuList("0-3junk").ok());
  EXPECT_FALSE(ParseCpuList("-1").ok());
  EXPECT_EQ(*ParseCpuList("3,1-2,2"), (std::vector<uint32_t>{1, 2, 3}));
}

TEST(CpuListTest, ReadNamesTheFile) {
  const std::string path = ::testing::TempDir() + "/cpu_list_test_online";
  std::ofstream(path) << "0-1,x\n";
  auto bad = ReadCpuList(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(path), std::string::npos) << bad.status().message();
  std::ofstream(path) << "0-1\n";
  EXPECT_EQ(*ReadCpuList(path), (std::vector<uint32_t>{0, 1}));
  std::filesystem::remove(path);
  EXPECT_FALSE(ReadCpuList(path).ok());
}

TEST(CpuListTest, FormatMakesRangesAndParsesBack) {
  EXPECT_EQ(FormatCpuList({}), "");
  EXPECT_EQ(FormatCpuList({3}), "3");
  EXPECT_EQ(FormatCpuList({0, 1}), "0-1");
  EXPECT_EQ(FormatCpuList({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  const std::vector<uint32_t> cpus = {0, 2, 3, 4, 9, 63, 64};
  EXPECT_EQ(*ParseCpuList(FormatCpuList(cpus)), cpus);
}

TEST(CpuListTest, ThisMachinesOnlineList) {
  auto cpus = ReadCpuList(kOnlineCpusPath);
  ASSERT_TRUE(cpus.ok()) << cpus.status().message();
  EXPECT_FALSE(cpus->empty());
}

}  // namespace
}  // namespace sluice
