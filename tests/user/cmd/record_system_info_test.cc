// `sluice record` with linux.system_info: the trace describes the machine's
// CPUs (CpuInfo: the `cpu` table's processor and frequencies), and with
// irq_names names its hardware IRQs (InterruptInfo from /proc/interrupts),
// which linux.irqs' linux_interrupt_mapping lists as the machine's
// /proc/interrupts does. Only /proc and /sys are read: not a kernel test.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "shm/base/file_util.h"
#include "tests/child_process_test_util.h"
#include "tests/user/cmd/record_test_util.h"
#include "tests/user/query/query_csv_test_util.h"
#include "user/probes/system_info/cpu_info_reader.h"
#include "user/probes/system_info/interrupt_mappings.h"
#include "user/query/engine/query_engine.h"

namespace sluice {
namespace {

class RecordSystemInfoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sluice_ = testing::SluiceBinDir() + "/sluice";
    ASSERT_EQ(access(sluice_.c_str(), X_OK), 0) << sluice_ << " not found: build it (make build/sluice)";
    dir_ = testing::MakeTempDir("sluice_record_system_info_test_");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Records a short session with linux.system_info (and irq_names as
  // given); returns the CSV of `sql` on the trace.
  std::string Record(bool irq_names, const std::string& sql) {
    std::string config = "buffers { size_kb: 1024 }\nduration_ms: 100\n"
                         "data_sources { config { name: \"linux.system_info\" ";
    if (irq_names) config += "system_info_config { irq_names: true } ";
    config += "} }\n";
    EXPECT_TRUE(WriteFileAtomically(dir_ + "/config.pbtx", config, 0644).ok());
    const std::string trace = dir_ + "/trace.pftrace";
    testing::CommandResult r =
        testing::RunToCompletion({sluice_, "record", "-q", "-c", dir_ + "/config.pbtx", "--txt", "-o", trace}, dir_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto engine = QueryEngine::Open(trace);
    if (!engine.ok()) {
      ADD_FAILURE() << engine.status().message();
      return "";
    }
    auto csv = testing::QueryToTraceProcessorCsv((*engine)->db(), sql, (*engine)->dialect());
    EXPECT_TRUE(csv.ok()) << csv.status().message();
    return csv.ok() ? *csv : "";
  }

  std::string RecordIrqMapping(bool irq_names) {
    return Record(irq_names,
                  "INCLUDE PERFETTO MODULE linux.irqs;\nSELECT irq_id, name FROM linux_interrupt_mapping ORDER BY id;");
  }

  std::string sluice_, dir_;
};

TEST_F(RecordSystemInfoTest, IrqNamesListTheMachinesInterrupts) {
  const std::string csv = RecordIrqMapping(true);
  std::ifstream in("/proc/interrupts");
  ASSERT_TRUE(in.is_open()) << "/proc/interrupts is not readable: is /proc mounted?";
  std::stringstream text;
  text << in.rdbuf();
  std::string expected = "\"irq_id\",\"name\"\n";
  for (const InterruptMapping& m : ParseProcInterrupts(text.str()))
    expected += std::to_string(m.irq_id) + ",\"" + m.name + "\"\n";
  ASSERT_GT(expected.size(), std::string("\"irq_id\",\"name\"\n").size()) << text.str();
  EXPECT_EQ(csv, expected);
}

TEST_F(RecordSystemInfoTest, WithoutIrqNamesNoMappings) {
  EXPECT_EQ(RecordIrqMapping(false), "\"irq_id\",\"name\"\n");
}

// Every CPU of /proc/cpuinfo has its processor name and the frequencies
// cpufreq lists (none in a guest without a cpufreq driver).
TEST_F(RecordSystemInfoTest, CpuInfoDescribesEveryCpu) {
  std::ifstream in("/proc/cpuinfo");
  ASSERT_TRUE(in.is_open()) << "/proc/cpuinfo is not readable: is /proc mounted?";
  std::stringstream text;
  text << in.rdbuf();
  std::string expected = "\"cpu\",\"processor\",\"freqs\"\n";
  for (const CpuDescription& cpu : ParseProcCpuinfo(text.str()))
    expected += std::to_string(cpu.index) + ",\"" + cpu.processor + "\"," +
                std::to_string(ReadCpuFrequencies("/sys/devices/system/cpu", cpu.index).size()) + "\n";
  EXPECT_EQ(Record(false,
                   "SELECT c.cpu, c.processor, (SELECT count(*) FROM cpu_available_frequencies f "
                   "WHERE f.ucpu = c.ucpu) AS freqs FROM cpu c WHERE c.processor IS NOT NULL ORDER BY c.cpu;"),
            expected);
}

}  // namespace
}  // namespace sluice
