#include "user/probes/ftrace/ftrace_buffer_choice.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

perfetto::protos::FtraceConfig Config(std::vector<std::string> events) {
  perfetto::protos::FtraceConfig c;
  for (const std::string& e : events) c.add_ftrace_events(e);
  return c;
}

const std::vector<TracefsReader> kTracedProbes = {{812, "traced_probes", "", 2}};

TEST(FtraceBufferChoiceTest, NobodyElseReadsTheTopLevel) {
  auto choice = ChooseFtraceBuffer(Config({"sched/sched_switch", "ftrace/print"}), {}, false, "sluice-1-0");
  ASSERT_TRUE(choice.ok()) << choice.status().message();
  EXPECT_EQ(choice->instance_name, "");
  EXPECT_FALSE(choice->copy_trace_marker);
  EXPECT_EQ(choice->reason, "");
}

TEST(FtraceBufferChoiceTest, AConfiguredInstanceIsKept) {
  auto config = Config({"ftrace/print"});
  config.set_instance_name("mine");
  auto choice = ChooseFtraceBuffer(config, kTracedProbes, false, "sluice-1-0");
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->instance_name, "mine");
  EXPECT_EQ(choice->reason, "");
}

TEST(FtraceBufferChoiceTest, KernelEventsOnlyMoveToAnInstanceOfItsOwn) {
  auto choice = ChooseFtraceBuffer(Config({"sched/*", "power/cpu_idle"}), kTracedProbes, false, "sluice-1-0");
  ASSERT_TRUE(choice.ok()) << choice.status().message();
  EXPECT_EQ(choice->instance_name, "sluice-1-0");
  EXPECT_FALSE(choice->copy_trace_marker);
  EXPECT_EQ(choice->reason,
            "traced_probes (pid 812) reads the top-level ftrace buffer: recording from instance sluice-1-0 of "
            "sluice's own, which leaves that tracer's buffer alone");
}

TEST(FtraceBufferChoiceTest, TraceMarkerWritesAreCopiedWhereTheKernelCan) {
  for (const auto& config : {Config({"ftrace/print"}), Config({"print"}), Config({"ftrace/*"})}) {
    auto choice = ChooseFtraceBuffer(config, kTracedProbes, true, "sluice-1-0");
    ASSERT_TRUE(choice.ok());
    EXPECT_EQ(choice->instance_name, "sluice-1-0");
    EXPECT_TRUE(choice->copy_trace_marker);
  }
  perfetto::protos::FtraceConfig atrace;
  atrace.add_atrace_categories("gfx");
  EXPECT_TRUE(FtraceConfigWantsTraceMarker(atrace));
  perfetto::protos::FtraceConfig apps;
  apps.add_atrace_apps("com.example");
  EXPECT_TRUE(FtraceConfigWantsTraceMarker(apps));
  EXPECT_FALSE(FtraceConfigWantsTraceMarker(Config({"sched/sched_switch"})));
}

TEST(FtraceBufferChoiceTest, TraceMarkerWritesWithoutTheKernelsCopyAreRefused) {
  auto choice = ChooseFtraceBuffer(Config({"sched/sched_switch", "ftrace/print"}),
                                   {{812, "traced_probes", "", 2}, {901, "trace-cmd", "", 1}}, false, "sluice-1-0");
  ASSERT_FALSE(choice.ok());
  EXPECT_EQ(choice.status().message(),
            "another tracer reads the top-level ftrace buffer: traced_probes (pid 812), trace-cmd (pid 901); both "
            "reading it would split the events between them, and an instance of sluice's own cannot get "
            "trace_marker writes (ftrace/print, atrace) on this kernel (no options/copy_trace_marker, Linux "
            "6.17+): stop that tracer first, or record without ftrace/print and atrace categories");
}

}  // namespace
}  // namespace sluice
