#include "user/probes/process_stats/proc_memory_counters.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

// As /proc/PID/status reads on 6.18 (lines between left out).
constexpr char kUserStatus[] =
    "Name:\tbash\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nPid:\t4242\n"
    "VmPeak:\t    9000 kB\nVmSize:\t    8948 kB\nVmLck:\t       4 kB\nVmPin:\t       0 kB\n"
    "VmHWM:\t    5520 kB\nVmRSS:\t    5392 kB\nRssAnon:\t    1860 kB\nRssFile:\t    3532 kB\n"
    "RssShmem:\t       0 kB\nVmData:\t    1480 kB\nVmSwap:\t      12 kB\nThreads:\t1\n";
constexpr char kKernelThreadStatus[] =
    "Name:\tkworker/0:1\nUmask:\t0000\nState:\tI (idle)\nTgid:\t17\nPid:\t17\nPPid:\t2\nThreads:\t1\n";

TEST(ProcMemoryCountersTest, StatusGivesEveryMemoryCounterInKb) {
  ProcMemoryCounters c;
  ParseProcStatus(kUserStatus, &c);
  EXPECT_TRUE(c.has_memory);
  EXPECT_EQ(c.vm_size_kb, 8948u);
  EXPECT_EQ(c.vm_rss_kb, 5392u);
  EXPECT_EQ(c.rss_anon_kb, 1860u);
  EXPECT_EQ(c.rss_file_kb, 3532u);
  EXPECT_EQ(c.rss_shmem_kb, 0u);
  EXPECT_EQ(c.vm_swap_kb, 12u);
  EXPECT_EQ(c.vm_locked_kb, 4u);
  EXPECT_EQ(c.vm_hwm_kb, 5520u);
  EXPECT_FALSE(c.oom_score_adj);
}

TEST(ProcMemoryCountersTest, AKernelThreadHasNoMemory) {
  ProcMemoryCounters c;
  ParseProcStatus(kKernelThreadStatus, &c);
  EXPECT_FALSE(c.has_memory);
  EXPECT_EQ(c, ProcMemoryCounters{});
}

TEST(ProcMemoryCountersTest, MalformedLinesAreSkipped) {
  ProcMemoryCounters c;
  ParseProcStatus("VmSize:\nVmRSS:\tlots kB\nVmSwap\t5 kB\nRssAnon:\t-3 kB\nVmHWM:\t7", &c);
  EXPECT_FALSE(c.has_memory);
  EXPECT_FALSE(c.vm_rss_kb);
  EXPECT_FALSE(c.vm_swap_kb);
  EXPECT_FALSE(c.rss_anon_kb);
  EXPECT_EQ(c.vm_hwm_kb, 7u);  // The last line needs no newline.
}

TEST(ProcMemoryCountersTest, SmapsRollupGivesRssAndPss) {
  ProcMemoryCounters c;
  ParseSmapsRollup(
      "55d0c0a00000-7ffd6f9fd000 ---p 00000000 00:00 0    [rollup]\nRss:    5400 kB\nPss:    2100 kB\n"
      "Pss_Dirty:  1500 kB\nPss_Anon:   1800 kB\nPss_File:    290 kB\nPss_Shmem:    10 kB\nSwap: 0 kB\n"
      "SwapPss:   3 kB\n",
      &c);
  EXPECT_EQ(c.smr_rss_kb, 5400u);
  EXPECT_EQ(c.smr_pss_kb, 2100u);
  EXPECT_EQ(c.smr_pss_anon_kb, 1800u);
  EXPECT_EQ(c.smr_pss_file_kb, 290u);
  EXPECT_EQ(c.smr_pss_shmem_kb, 10u);
  EXPECT_EQ(c.smr_swap_pss_kb, 3u);
}

TEST(ProcMemoryCountersTest, StatRuntimesCountFieldsAfterTheComm) {
  ProcMemoryCounters c;
  // A comm with spaces and parentheses; utime 250 and stime 40 ticks.
  ASSERT_TRUE(ParseProcStatRuntimes("77 (a (b) c) S 1 77 77 0 -1 4194560 100 0 0 0 250 40 0 0 20 0 1 0 5\n",
                                    100, &c));
  EXPECT_EQ(c.runtime_user_mode_ns, 2500000000u);
  EXPECT_EQ(c.runtime_kernel_mode_ns, 400000000u);
}

TEST(ProcMemoryCountersTest, ATruncatedStatIsRefused) {
  ProcMemoryCounters c;
  EXPECT_FALSE(ParseProcStatRuntimes("77 (sh) S 1 77 77 0 -1 4194560 100 0 0 0 250", 100, &c));
  EXPECT_FALSE(ParseProcStatRuntimes("77 sh S", 100, &c));
  EXPECT_FALSE(ParseProcStatRuntimes("77 (sh) S 1 77 77 0 -1 4194560 100 0 0 0 x 40 0", 100, &c));
  EXPECT_FALSE(c.runtime_user_mode_ns);
}

TEST(ProcMemoryCountersTest, StartTimeIsField22InNsSinceBoot) {
  const std::string_view stat = "77 (a (b) c) S 1 77 77 0 -1 4194560 100 0 0 0 250 40 0 0 20 0 1 0 5 4096 3\n";
  EXPECT_EQ(ParseProcStartFromBootNs(stat, 100), 50000000u);
  EXPECT_EQ(ProcStatField(stat, 3), std::nullopt);  // "S": not a number
  EXPECT_EQ(ProcStatField(stat, 4), 1u);
  EXPECT_EQ(ProcStatField(stat, 24), 3u);
  EXPECT_EQ(ProcStatField(stat, 25), std::nullopt);  // past the end
  EXPECT_EQ(ParseProcStartFromBootNs("77 (sh) S 1 77", 100), std::nullopt);
  EXPECT_EQ(ParseProcStartFromBootNs(stat, 0), std::nullopt);
}

}  // namespace
}  // namespace sluice
