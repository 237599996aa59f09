// Tests for user/probes/bpf/bpf_lost_records.h: which records of a CPU
// upstream's trace_processor is told were lost, and that each report
// carries only the increase.
#include "user/probes/bpf/bpf_lost_records.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

BpfCpuStats Cpu(uint64_t produced, uint64_t delivered, uint64_t dropped, uint64_t decode_errors) {
  BpfCpuStats c;
  c.produced = produced;
  c.delivered = delivered;
  c.dropped = dropped;
  c.decode_errors = decode_errors;
  return c;
}

BpfSourceStats Source(std::vector<BpfCpuStats> per_cpu) {
  BpfSourceStats s;
  s.per_cpu = std::move(per_cpu);
  return s;
}

std::vector<std::pair<uint32_t, uint64_t>> Pairs(const std::vector<BpfLostRecords>& lost) {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (const BpfLostRecords& l : lost) out.push_back({l.cpu, l.records});
  return out;
}

TEST(BpfLostRecordsTest, DroppedAndUndecodableRecordsAreLost) {
  EXPECT_EQ(BpfLostRecordsOfCpu(Cpu(100, 90, 10, 3), false), 13u);
  EXPECT_EQ(BpfLostRecordsOfCpu(Cpu(100, 90, 10, 3), true), 13u);
}

TEST(BpfLostRecordsTest, UnaccountedRecordsCountOnlyInTheFinalCounters) {
  // 5 records produced, neither delivered nor dropped: in flight before the
  // end, lost after it.
  EXPECT_EQ(BpfLostRecordsOfCpu(Cpu(100, 85, 10, 0), false), 10u);
  EXPECT_EQ(BpfLostRecordsOfCpu(Cpu(100, 85, 10, 0), true), 15u);
  // More settled than produced (the kernel's and the reader's counters are
  // read at slightly different times): nothing extra.
  EXPECT_EQ(BpfLostRecordsOfCpu(Cpu(100, 95, 10, 0), true), 10u);
}

TEST(BpfLostRecordsTest, EachReportCarriesOnlyTheIncreasePerCpu) {
  std::vector<uint64_t> reported;
  // CPU 1 lost nothing: no packet for it.
  EXPECT_EQ(Pairs(NextBpfLostRecords(Source({Cpu(10, 8, 2, 0), Cpu(5, 5, 0, 0)}), false, &reported)),
            (std::vector<std::pair<uint32_t, uint64_t>>{{0, 2}}));
  // Nothing new: nothing to report.
  EXPECT_TRUE(NextBpfLostRecords(Source({Cpu(10, 8, 2, 0), Cpu(5, 5, 0, 0)}), false, &reported).empty());
  // The end: CPU 0 dropped 3 more, CPU 1 has 4 records that never came.
  EXPECT_EQ(Pairs(NextBpfLostRecords(Source({Cpu(20, 15, 5, 0), Cpu(9, 5, 0, 0)}), true, &reported)),
            (std::vector<std::pair<uint32_t, uint64_t>>{{0, 3}, {1, 4}}));
  // What a reader adds up equals the final figures.
  EXPECT_EQ(reported, (std::vector<uint64_t>{5, 4}));
}

}  // namespace
}  // namespace sluice
