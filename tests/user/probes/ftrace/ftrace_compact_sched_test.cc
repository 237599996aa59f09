#include "user/probes/ftrace/ftrace_compact_sched.h"

#include <gtest/gtest.h>

#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "tests/user/probes/ftrace/ftrace_test_util.h"

namespace sluice {
namespace {

using perfetto::protos::FtraceEventBundle;

TEST(FtraceCompactSchedTest, FormatsOfEveryTree) {
  struct {
    const char* tree;
    bool waking;
  } cases[] = {{testing::kTree34, false}, {testing::kTree310, false},  // sched_waking: 4.3+
               {testing::kTree44, true}, {testing::kTreeHost, true}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.tree);
    FtraceFormatTable table = testing::LoadTreeOrDie(c.tree);
    std::string why;
    CompactSchedFormat f = CompactSchedFormat::FromTable(table, &why);
    EXPECT_TRUE(f.switch_valid) << why;
    EXPECT_EQ(f.waking_valid, c.waking) << why;
    const FtraceEventFormat* sw = table.FindByName("sched", "sched_switch");
    EXPECT_EQ(f.switch_id, sw->id);
    EXPECT_EQ(f.next_comm_offset, sw->FindField("next_comm")->offset);
    EXPECT_EQ(f.prev_state.size, sw->FindField("prev_state")->size);
  }
}

TEST(FtraceCompactSchedTest, InternsByContentUpToTheNul) {
  FtraceFormatTable table = testing::LoadTreeOrDie(testing::kTreeHost);
  CompactSchedFormat f = CompactSchedFormat::FromTable(table);
  ASSERT_TRUE(f.switch_valid);
  auto buf = std::make_unique<CompactSchedBuffer>();
  auto record = [&](const char* comm16, int pid) {
    std::vector<uint8_t> r = testing::RecordBuilder(*table.FindById(f.switch_id))
                                 .Int("next_pid", pid)
                                 .Build();
    memcpy(r.data() + f.next_comm_offset, comm16, 16);
    return r;
  };
  // Same comm, different stale bytes after the NUL (older kernels).
  auto a = record("bash\0XXXXXXXXXXX", 1);
  auto b = record("bash\0YYYYYYYYYYY", 2);
  auto c = record("0123456789abcdef", 3);  // No NUL at all.
  uint64_t ts = 100;
  for (auto* r : {&a, &b, &c, &a}) {
    FtraceRecord rec{ts++, r->data(), static_cast<uint32_t>(r->size())};
    buf->AppendSwitch(f, rec);
  }
  EXPECT_EQ(buf->comm_count(), 2u);
  CompactSchedBuffer::Mark mark = buf->GetMark();
  FtraceRecord extra{200, c.data(), static_cast<uint32_t>(c.size())};
  buf->AppendSwitch(f, extra);
  buf->Rollback(mark);
  EXPECT_EQ(buf->switch_count(), 4u);

  HeapProtoWriter w;
  buf->WriteAndReset(w.writer());
  EXPECT_TRUE(buf->empty());
  FtraceEventBundle bundle;
  ASSERT_TRUE(bundle.ParseFromString(w.Contents()));
  const auto& cs = bundle.compact_sched();
  ASSERT_EQ(cs.intern_table_size(), 2);
  EXPECT_EQ(cs.intern_table(0), "bash");
  EXPECT_EQ(cs.intern_table(1), "0123456789abcdef");
  ASSERT_EQ(cs.switch_timestamp_size(), 4);
  EXPECT_EQ(cs.switch_timestamp(0), 100u);
  EXPECT_EQ(cs.switch_timestamp(3), 1u);
  EXPECT_EQ(cs.switch_next_comm_index(1), 0u);
  EXPECT_EQ(cs.switch_next_comm_index(2), 1u);
  EXPECT_EQ(cs.switch_next_pid(3), 1);
  EXPECT_EQ(cs.waking_pid_size(), 0);

  // After a reset the interner starts over.
  FtraceRecord again{5, c.data(), static_cast<uint32_t>(c.size())};
  buf->AppendSwitch(f, again);
  EXPECT_EQ(buf->comm_count(), 1u);
}

}  // namespace
}  // namespace sluice
