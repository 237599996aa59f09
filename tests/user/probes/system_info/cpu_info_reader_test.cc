#include "user/probes/system_info/cpu_info_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "shm/base/file_util.h"
#include "tests/user/cmd/record_test_util.h"

namespace sluice {
namespace {

// An x86 guest's shape: no "Processor" line, so every CPU is "unknown";
// x86's lowercase "flags" are not read (upstream reads arm's "Features").
TEST(CpuInfoReaderTest, X86CpusAreUnknownProcessors) {
  const char* text =
      "processor\t: 0\n"
      "vendor_id\t: GenuineIntel\n"
      "model name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n"
      "flags\t\t: fpu vme mte\n"
      "\n"
      "processor\t: 1\n"
      "vendor_id\t: GenuineIntel\n"
      "\n";
  const std::vector<CpuDescription> cpus = ParseProcCpuinfo(text);
  ASSERT_EQ(cpus.size(), 2u);
  for (uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(cpus[i].index, i);
    EXPECT_EQ(cpus[i].processor, "unknown");
    EXPECT_FALSE(cpus[i].has_arm_identifier());
    EXPECT_EQ(cpus[i].features, 0u);
  }
}

// An arm64 phone's shape: the model line first, the identifier fields in
// hex (architecture and revision decimal), the known features as bits.
TEST(CpuInfoReaderTest, ArmIdentifierAndFeatures) {
  const char* text =
      "Processor\t: AArch64 Processor rev 13 (aarch64)\n"
      "processor\t: 0\n"
      "BogoMIPS\t: 38.40\n"
      "Features\t: fp asimd mte3 sve\n"
      "CPU implementer\t: 0x41\n"
      "CPU architecture: 8\n"
      "CPU variant\t: 0x2\n"
      "CPU part\t: 0xd05\n"
      "CPU revision\t: 13\n"
      "\n"
      "processor\t: 4\n"
      "Features\t: fp mte mte3\n"
      "CPU implementer\t: 0x41\n"
      "CPU part\t: 0xd41\n"
      "\n";
  const std::vector<CpuDescription> cpus = ParseProcCpuinfo(text);
  ASSERT_EQ(cpus.size(), 2u);
  EXPECT_EQ(cpus[0].processor, "AArch64 Processor rev 13 (aarch64)");
  ASSERT_TRUE(cpus[0].has_arm_identifier());
  EXPECT_EQ(*cpus[0].implementer, 0x41u);
  EXPECT_EQ(*cpus[0].architecture, 8u);
  EXPECT_EQ(*cpus[0].variant, 0x2u);
  EXPECT_EQ(*cpus[0].part, 0xd05u);
  EXPECT_EQ(*cpus[0].revision, 13u);
  EXPECT_EQ(cpus[0].features, 2u);  // mte3 only
  EXPECT_EQ(cpus[1].index, 4u);
  EXPECT_FALSE(cpus[1].has_arm_identifier());  // no architecture, variant, revision
  EXPECT_EQ(cpus[1].features, 3u);
}

// A model line that comes after the CPUs (older arm kernels print
// "Hardware" last; some print "Processor" there too) names only the CPUs
// whose blocks end after it, as upstream's reader does.
TEST(CpuInfoReaderTest, ModelLineNamesOnlyLaterCpus) {
  const char* text =
      "processor : 0\n\n"
      "Processor : ARMv7 Processor rev 10 (v7l)\n"
      "processor : 1\n\n";
  const std::vector<CpuDescription> cpus = ParseProcCpuinfo(text);
  ASSERT_EQ(cpus.size(), 2u);
  EXPECT_EQ(cpus[0].processor, "unknown");
  EXPECT_EQ(cpus[1].processor, "ARMv7 Processor rev 10 (v7l)");
}

TEST(CpuInfoReaderTest, FrequenciesAndCapacityFromSysfs) {
  const std::string dir = testing::MakeTempDir("sluice_cpu_info_reader_test_");
  ASSERT_FALSE(dir.empty());
  std::filesystem::create_directories(dir + "/cpu1/cpufreq");
  ASSERT_TRUE(WriteFileAtomically(dir + "/cpu1/cpufreq/scaling_available_frequencies", "1800000 300000 600000 \n",
                                  0644).ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/cpu1/cpufreq/scaling_boost_frequencies", "2400000 1800000\n", 0644).ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/cpu1/cpu_capacity", "1024\n", 0644).ok());
  EXPECT_EQ(ReadCpuFrequencies(dir, 1), (std::vector<uint32_t>{300000, 600000, 1800000, 2400000}));
  EXPECT_EQ(ReadCpuCapacity(dir, 1), 1024u);
  EXPECT_TRUE(ReadCpuFrequencies(dir, 0).empty());
  EXPECT_FALSE(ReadCpuCapacity(dir, 0).has_value());
  std::filesystem::remove_all(dir);
}

// This machine's /proc/cpuinfo lists every CPU the kernel has online.
TEST(CpuInfoReaderTest, ThisMachinesCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  ASSERT_TRUE(in.is_open()) << "/proc/cpuinfo is not readable: is /proc mounted?";
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(ParseProcCpuinfo(text.str()).size(), static_cast<size_t>(sysconf(_SC_NPROCESSORS_ONLN))) << text.str();
}

}  // namespace
}  // namespace sluice
