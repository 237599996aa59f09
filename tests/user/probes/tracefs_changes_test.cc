#include "user/probes/tracefs_changes.h"

#include <gtest/gtest.h>

#include "tests/user/probes/fake_tracefs.h"

namespace sluice {
namespace {

using testing::FakeTracefs;

class TracefsChangesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_.PopulateRoot();
    fs_ = fake_.Open();
    ASSERT_NE(fs_, nullptr);
  }
  TracefsChanges ChangedByUs() { return fake_.ApplyTypicalSession(); }

  FakeTracefs fake_;
  std::unique_ptr<Tracefs> fs_;
};

TEST_F(TracefsChangesTest, UndoPutsBackWhatWasChanged) {
  TracefsChanges c = ChangedByUs();
  EXPECT_FALSE(c.empty());
  TracefsUndoReport report;
  UndoEventChanges(*fs_, &c, {}, &report);
  UndoSettingChanges(*fs_, &c, &report);
  EXPECT_EQ(report.Summary(),
            "disabled 2 events, tracing_on 1 -> 0, trace_clock boot -> local, "
            "buffer_size_kb 2051 -> 1408");
  EXPECT_TRUE(report.errors.empty());
  EXPECT_TRUE(c.empty()) << "everything undone is taken out of the changes";
  EXPECT_EQ(fake_.Read("tracing_on"), "0");
  EXPECT_EQ(fake_.Read("trace_clock"), "local");
  EXPECT_EQ(fake_.Read("buffer_size_kb"), "1408");
  EXPECT_EQ(fake_.Read("events/sched/sched_switch/enable"), "0");
  EXPECT_EQ(fake_.Read("events/sched/sched_waking/enable"), "0");
  EXPECT_EQ(fake_.Read("events/sched/sched_wakeup/enable"), "1\n");  // Never ours.
}

TEST_F(TracefsChangesTest, WhatOthersChangedSinceStays) {
  TracefsChanges c = ChangedByUs();
  // Since then someone picked another clock and buffer size, and disabled
  // one of our events.
  fake_.Write("trace_clock", "local [global] boot\n");
  fake_.Write("buffer_size_kb", "4096\n");
  fake_.Write("events/sched/sched_waking/enable", "0\n");
  TracefsUndoReport report;
  UndoEventChanges(*fs_, &c, {}, &report);
  UndoSettingChanges(*fs_, &c, &report);
  EXPECT_EQ(report.Summary(),
            "disabled 1 event, tracing_on 1 -> 0, "
            "trace_clock left at global (changed since from boot), "
            "buffer_size_kb left at 4096 (changed since from 2051)");
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(fake_.Read("trace_clock"), "local [global] boot\n");
  EXPECT_EQ(fake_.Read("buffer_size_kb"), "4096\n");
  EXPECT_EQ(fake_.Read("events/sched/sched_waking/enable"), "0\n");
}

TEST_F(TracefsChangesTest, AlreadyRestoredIsNothingToUndo) {
  TracefsChanges c = ChangedByUs();
  // Someone (RestoreTracefsState in a test, a user) put it all back already.
  fake_.Write("tracing_on", "0\n");
  fake_.Write("trace_clock", "[local] global boot\n");
  fake_.Write("buffer_size_kb", "1408\n");
  fake_.Write("events/sched/sched_switch/enable", "0\n");
  fake_.Write("events/sched/sched_waking/enable", "0\n");
  TracefsUndoReport report;
  UndoEventChanges(*fs_, &c, {}, &report);
  UndoSettingChanges(*fs_, &c, &report);
  EXPECT_EQ(report.Summary(), "nothing to undo");
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(fake_.Read("trace_clock"), "[local] global boot\n");  // Not even rewritten.
}

TEST_F(TracefsChangesTest, BufferPercentIsPutBackUnlessChangedSince) {
  TracefsChanges c;
  c.tracefs_root = fake_.root();
  c.buffer_percent_found = 50;
  c.buffer_percent_set = 25;
  fake_.Write("buffer_percent", "25\n");
  TracefsUndoReport report;
  UndoSettingChanges(*fs_, &c, &report);
  EXPECT_EQ(report.Summary(), "buffer_percent 25 -> 50");
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(fake_.Read("buffer_percent"), "50");

  c.buffer_percent_found = 50;
  c.buffer_percent_set = 25;
  fake_.Write("buffer_percent", "75\n");  // Someone else's since.
  report = {};
  UndoSettingChanges(*fs_, &c, &report);
  EXPECT_EQ(report.Summary(), "buffer_percent left at 75 (changed since from 25)");
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(fake_.Read("buffer_percent"), "75\n");
}

TEST_F(TracefsChangesTest, UnknownSetSizeIsWrittenBack) {
  // The owner died between writing the size and reading it back.
  TracefsChanges c = ChangedByUs();
  c.buffer_size_kb_set = 0;
  fake_.Write("buffer_size_kb", "3000\n");
  TracefsUndoReport report;
  UndoSettingChanges(*fs_, &c, &report);
  EXPECT_EQ(fake_.Read("buffer_size_kb"), "1408");
}

TEST_F(TracefsChangesTest, PerCpuSizesAndFailuresStay) {
  TracefsChanges c;
  c.tracefs_root = fake_.root();
  c.per_cpu_buffer_size_kb_found = {{0, 100}, {1, 200}, {7, 300}};  // cpu7 has no directory.
  c.buffer_size_kb_set = 512;
  c.enabled_events = {"sched/sched_switch", "nope/gone"};
  fake_.Write("buffer_size_kb", "512\n");
  fake_.Write("events/sched/sched_switch/enable", "1\n");
  TracefsUndoReport report;
  UndoEventChanges(*fs_, &c, {}, &report);
  UndoSettingChanges(*fs_, &c, &report);
  EXPECT_EQ(fake_.Read("per_cpu/cpu0/buffer_size_kb"), "100");
  EXPECT_EQ(fake_.Read("per_cpu/cpu1/buffer_size_kb"), "200");
  ASSERT_EQ(report.errors.size(), 2u) << report.Summary();
  EXPECT_NE(report.errors[0].find("nope/gone/enable"), std::string::npos) << report.errors[0];
  EXPECT_NE(report.errors[1].find("cpu7/buffer_size_kb"), std::string::npos) << report.errors[1];
  // What failed stays to be undone.
  EXPECT_EQ(c.enabled_events, std::vector<std::string>{"nope/gone"});
  EXPECT_EQ(c.per_cpu_buffer_size_kb_found, (std::vector<std::pair<uint32_t, uint32_t>>{{7, 300}}));
}

TEST_F(TracefsChangesTest, AtraceIsStopped) {
  TracefsChanges c;
  c.atrace_path = "/system/bin/atrace";
  std::vector<std::vector<std::string>> ran;
  TracefsUndoReport report;
  UndoEventChanges(*fs_, &c,
                   [&](const std::vector<std::string>& argv, std::string*) {
                     ran.push_back(argv);
                     return 0;
                   },
                   &report);
  EXPECT_EQ(ran, (std::vector<std::vector<std::string>>{
                     {"/system/bin/atrace", "--async_stop", "--only_userspace"}}));
  EXPECT_EQ(report.Summary(), "stopped atrace");
  EXPECT_TRUE(c.empty());
}

}  // namespace
}  // namespace sluice
