#include "user/probes/bpf/bpf_settings.h"

#include <algorithm>
#include <cstring>

#include <gtest/gtest.h>

#include "sluice/bpf_config.pb.h"

namespace sluice {
namespace {

protos::BpfConfig Config(std::initializer_list<const char*> events) {
  protos::BpfConfig c;
  for (const char* e : events) c.add_events(e);
  return c;
}

TEST(BpfSettingsTest, EventNamesRoundTrip) {
  for (size_t i = 0; i < kBpfEventCount; i++) {
    BpfEventName n = BpfEventNameOf(static_cast<BpfEvent>(i));
    auto e = BpfEventFromName(std::string(n.group) + "/" + std::string(n.name));
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(static_cast<size_t>(*e), i);
  }
  EXPECT_FALSE(BpfEventFromName("sched/sched_switc").has_value());
  EXPECT_FALSE(BpfEventFromName("sched_switch").has_value());
  EXPECT_EQ(BpfEventFromName("ftrace/print"), BpfEvent::kPrint);
}

TEST(BpfSettingsTest, GroupsAndUnknownEvents) {
  auto s = BpfSettings::FromConfig(Config({"task/*", "ftrace/print", "sched/bogus", "task/task_rename"}), 2, false);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->events, (std::vector<BpfEvent>{BpfEvent::kTaskRename, BpfEvent::kTaskNewtask, BpfEvent::kPrint}));
  EXPECT_EQ(s->unknown_events, std::vector<std::string>{"sched/bogus"});
}

TEST(BpfSettingsTest, NoUsableEventIsAnError) {
  auto s = BpfSettings::FromConfig(Config({"sched/bogus"}), 2, false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("bpf_config.events"), std::string::npos);
  EXPECT_FALSE(BpfSettings::FromConfig(Config({}), 2, false).ok());
}

TEST(BpfSettingsTest, DefaultsAndRounding) {
  auto s = BpfSettings::FromConfig(Config({"sched/sched_switch"}), 4, false);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->ring_bytes, BpfSettings::kDefaultRingKb * 1024);
  EXPECT_EQ(s->marker_payload_bytes, BpfSettings::kDefaultMarkerPayloadBytes);
  EXPECT_EQ(s->rate_cost_ns, 0u);

  protos::BpfConfig c = Config({"sched/sched_switch"});
  c.set_ringbuf_size_kb(100);      // -> 128 KiB
  c.set_marker_payload_bytes(13);  // -> 16
  s = BpfSettings::FromConfig(c, 4, false);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->ring_bytes, 128u * 1024);
  EXPECT_EQ(s->marker_payload_bytes, 16u);
  // Shared ring: num_cpus times, rounded up to a power of two.
  s = BpfSettings::FromConfig(c, 3, true);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->ring_bytes, 512u * 1024);

  c.set_ringbuf_size_kb(1);  // less than a page
  c.set_marker_payload_bytes(100000);
  s = BpfSettings::FromConfig(c, 1, false);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->ring_bytes, 4096u);
  EXPECT_EQ(s->marker_payload_bytes, 4096u / 4 - 64);  // room for 4 records

  c.set_ringbuf_size_kb(BpfSettings::kMaxRingKb + 1);
  EXPECT_FALSE(BpfSettings::FromConfig(c, 1, false).ok());
}

TEST(BpfSettingsTest, RateCeiling) {
  protos::BpfConfig c = Config({"sched/sched_switch"});
  c.set_per_cpu_rate_limit(1000);
  auto s = BpfSettings::FromConfig(c, 1, false);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->rate_cost_ns, 1'000'000u);
  EXPECT_EQ(s->rate_burst_ns, BpfSettings::kRateBurstNs);
  c.set_per_cpu_rate_limit(2);  // slower than one per burst window
  s = BpfSettings::FromConfig(c, 1, false);
  EXPECT_EQ(s->rate_burst_ns, 500'000'000u);
}

TEST(BpfSettingsTest, PidsAndTgids) {
  protos::BpfConfig c = Config({"sched/sched_switch"});
  c.add_pids(12);
  c.add_tgids(34);
  auto s = BpfSettings::FromConfig(c, 1, false);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->pids, std::vector<uint32_t>{12});
  EXPECT_EQ(s->tgids, std::vector<uint32_t>{34});
  c.add_pids(-1);
  EXPECT_FALSE(BpfSettings::FromConfig(c, 1, false).ok());
}

TEST(BpfSettingsTest, CommPrefixesMatchLikeTheProgram) {
  protos::BpfConfig c = Config({"sched/sched_switch"});
  c.add_comm_prefixes("chrome");
  c.add_comm_prefixes("a-very-long-nam");  // 15 bytes: the longest
  auto s = BpfSettings::FromConfig(c, 1, false);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->comm_prefixes.size(), 2u);
  auto comm = [](const char* text) {
    static char buf[16];
    memset(buf, 0, sizeof(buf));
    memcpy(buf, text, std::min<size_t>(strlen(text), 15));
    return buf;
  };
  EXPECT_TRUE(s->comm_prefixes[0].Matches(comm("chrome")));
  EXPECT_TRUE(s->comm_prefixes[0].Matches(comm("chrome_renderer")));
  EXPECT_FALSE(s->comm_prefixes[0].Matches(comm("chrom")));
  EXPECT_FALSE(s->comm_prefixes[0].Matches(comm("xchrome")));
  EXPECT_TRUE(s->comm_prefixes[1].Matches(comm("a-very-long-nam")));
  EXPECT_FALSE(s->comm_prefixes[1].Matches(comm("a-very-long-na")));

  c.add_comm_prefixes("sixteen-bytes-xx");
  EXPECT_FALSE(BpfSettings::FromConfig(c, 1, false).ok());
  protos::BpfConfig many = Config({"sched/sched_switch"});
  for (int i = 0; i < 9; i++) many.add_comm_prefixes("p" + std::to_string(i));
  auto err = BpfSettings::FromConfig(many, 1, false);
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().message().find("at most 8"), std::string::npos);
}

}  // namespace
}  // namespace sluice
