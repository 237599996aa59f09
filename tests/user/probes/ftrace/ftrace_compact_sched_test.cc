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
    FtraceFormatTable table;
    ASSERT_TRUE(testing::LoadTree(c.tree, &table));
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
  FtraceFormatTable table;
  ASSERT_TRUE(testing::LoadTree(testing::kTreeHost, &table));
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

// Repeats of the last comm skip the hash (the same 16 bytes); the shortcut
// holds within a bundle only, and alternating comms still get their own
// entries.
TEST(FtraceCompactSchedTest, RepeatedCommsKeepTheirIndexWithinABundleOnly) {
  FtraceFormatTable table;
  ASSERT_TRUE(testing::LoadTree(testing::kTreeHost, &table));
  CompactSchedFormat f = CompactSchedFormat::FromTable(table);
  ASSERT_TRUE(f.switch_valid);
  auto buf = std::make_unique<CompactSchedBuffer>();
  auto record = [&](const char* comm16) {
    std::vector<uint8_t> r = testing::RecordBuilder(*table.FindById(f.switch_id)).Build();
    memcpy(r.data() + f.next_comm_offset, comm16, 16);
    return r;
  };
  auto a = record("stress-ng\0\0\0\0\0\0");
  auto b = record("swapper/0\0\0\0\0\0\0");
  auto a_stale = record("stress-ng\0ZZZZZZ");
  uint64_t ts = 1;
  auto append = [&](const std::vector<uint8_t>& r) {
    buf->AppendSwitch(f, FtraceRecord{ts++, r.data(), static_cast<uint32_t>(r.size())});
  };
  for (auto* r : {&b, &a, &a, &b, &a_stale, &a, &b, &b}) append(*r);
  EXPECT_EQ(buf->comm_count(), 2u);
  HeapProtoWriter w;
  buf->WriteAndReset(w.writer());
  FtraceEventBundle bundle;
  ASSERT_TRUE(bundle.ParseFromString(w.Contents()));
  const auto& cs = bundle.compact_sched();
  ASSERT_EQ(cs.intern_table_size(), 2);
  EXPECT_EQ(cs.intern_table(0), "swapper/0");
  EXPECT_EQ(cs.intern_table(1), "stress-ng");
  std::vector<uint32_t> indices(cs.switch_next_comm_index().begin(), cs.switch_next_comm_index().end());
  EXPECT_EQ(indices, (std::vector<uint32_t>{0, 1, 1, 0, 1, 1, 0, 0}));

  // The next bundle starts with the comm the last one ended on: it is
  // interned again, as entry 0 of the new table.
  append(b);
  append(a);
  EXPECT_EQ(buf->comm_count(), 2u);
  HeapProtoWriter w2;
  buf->WriteAndReset(w2.writer());
  FtraceEventBundle next;
  ASSERT_TRUE(next.ParseFromString(w2.Contents()));
  ASSERT_EQ(next.compact_sched().intern_table_size(), 2);
  EXPECT_EQ(next.compact_sched().intern_table(0), "swapper/0");
  EXPECT_EQ(next.compact_sched().switch_next_comm_index(0), 0u);
  EXPECT_EQ(next.compact_sched().switch_next_comm_index(1), 1u);
}

}  // namespace
}  // namespace sluice
