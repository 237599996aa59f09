#include "user/probes/ftrace/ftrace_format.h"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "shm/base/file_util.h"

#include "tests/user/probes/ftrace/ftrace_test_util.h"

namespace sluice {
namespace {

using testing::kTree310;
using testing::kTree34;
using testing::kTree44;
using testing::kTreeHost;

TEST(FtraceFormatTest, HeaderOf32BitKernelHasFourByteCommit) {
  auto t = FtraceFormatTable::Load(kTree34, {}, nullptr);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const FtraceHeaderFormat& h = t->header();
  EXPECT_EQ(h.timestamp_offset, 0u);
  EXPECT_EQ(h.commit_offset, 8u);
  EXPECT_EQ(h.commit_size, 4u);
  EXPECT_EQ(h.data_offset, 12u);
  EXPECT_EQ(h.data_size, 4084u);
  EXPECT_EQ(h.page_size(), 4096u);
  EXPECT_FALSE(h.has_time_stamp_type);
}

TEST(FtraceFormatTest, HeadersOf64BitKernels) {
  for (const char* tree : {kTree310, kTree44, kTreeHost}) {
    SCOPED_TRACE(tree);
    auto t = FtraceFormatTable::Load(tree, {}, nullptr);
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->header().commit_size, 8u);
    EXPECT_EQ(t->header().data_offset, 16u);
    EXPECT_EQ(t->header().page_size(), 4096u);
  }
  auto host = FtraceFormatTable::Load(kTreeHost, {}, nullptr);
  ASSERT_TRUE(host.ok());
  EXPECT_TRUE(host->header().has_time_stamp_type);
}

TEST(FtraceFormatTest, SchedSwitchOn34HasCommonPadding) {
  std::vector<std::string> missing;
  auto t = FtraceFormatTable::Load(kTree34, {"sched/sched_switch", "sched/no_such", "bad"},
                                   &missing);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(missing, (std::vector<std::string>{"sched/no_such", "bad"}));
  const FtraceEventFormat* e = t->FindByName("sched", "sched_switch");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->id, 70u);
  EXPECT_EQ(t->FindById(70), e);
  EXPECT_EQ(t->FindById(71), nullptr);
  EXPECT_EQ(t->FindById(100000), nullptr);
  const FtraceFieldFormat* padding = e->FindField("common_padding");
  ASSERT_NE(padding, nullptr);
  EXPECT_EQ(padding->offset, 8u);
  const FtraceFieldFormat* prev_comm = e->FindField("prev_comm");
  ASSERT_NE(prev_comm, nullptr);
  EXPECT_EQ(prev_comm->offset, 12u);
  EXPECT_EQ(prev_comm->size, 16u);
  EXPECT_EQ(prev_comm->kind, FtraceFieldKind::kFixedString);
  EXPECT_EQ(prev_comm->type, "char[16]");
  const FtraceFieldFormat* prev_state = e->FindField("prev_state");
  ASSERT_NE(prev_state, nullptr);
  EXPECT_EQ(prev_state->size, 4u);  // long on 32-bit.
  EXPECT_TRUE(prev_state->is_signed);
  EXPECT_EQ(prev_state->kind, FtraceFieldKind::kInt);
  EXPECT_EQ(e->min_size, 64u);
}

TEST(FtraceFormatTest, SchedSwitchOnHost) {
  auto t = FtraceFormatTable::Load(kTreeHost, {"sched/sched_switch"}, nullptr);
  ASSERT_TRUE(t.ok());
  const FtraceEventFormat* e = t->FindByName("sched", "sched_switch");
  ASSERT_NE(e, nullptr);
  ASSERT_EQ(e->fields.size(), 11u);
  EXPECT_EQ(e->fields[0].name, "common_type");
  EXPECT_EQ(e->fields[4].name, "prev_comm");
  EXPECT_EQ(e->FindField("prev_state")->size, 8u);
  EXPECT_EQ(e->FindField("next_pid")->type, "pid_t");
  EXPECT_EQ(e->FindField("next_pid")->offset, 56u);
}

TEST(FtraceFormatTest, PrintBufIsTrailingStringOnAllKernels) {
  for (const char* tree : {kTree34, kTree310, kTree44, kTreeHost}) {
    SCOPED_TRACE(tree);
    auto t = FtraceFormatTable::Load(tree, {"ftrace/print"}, nullptr);
    ASSERT_TRUE(t.ok());
    const FtraceEventFormat* e = t->FindByName("ftrace", "print");
    ASSERT_NE(e, nullptr);
    const FtraceFieldFormat* buf = e->FindField("buf");
    ASSERT_NE(buf, nullptr);
    EXPECT_EQ(buf->kind, FtraceFieldKind::kTrailingString);
    EXPECT_EQ(buf->size, 0u);
  }
}

TEST(FtraceFormatTest, DataLocFields) {
  auto t = FtraceFormatTable::Load(
      kTreeHost, {"sched/sched_process_exec", "irq/irq_handler_entry", "cgroup/cgroup_mkdir"},
      nullptr);
  ASSERT_TRUE(t.ok());
  const FtraceFieldFormat* f = t->FindByName("sched", "sched_process_exec")->FindField("filename");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->kind, FtraceFieldKind::kDataLocString);
  EXPECT_EQ(f->type, "__data_loc char[]");
  EXPECT_EQ(f->size, 4u);
  EXPECT_EQ(t->FindByName("irq", "irq_handler_entry")->FindField("name")->kind,
            FtraceFieldKind::kDataLocString);
  ASSERT_NE(t->FindByName("cgroup", "cgroup_mkdir"), nullptr);
}

TEST(FtraceFormatTest, FieldLineVariants) {
  auto f = FtraceFormatTable::ParseFieldLine(
      "\tfield:__data_loc u8[] buf;\toffset:12;\tsize:4;\tsigned:0;");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->kind, FtraceFieldKind::kDataLocArray);
  EXPECT_EQ(f->element_size, 1u);
  EXPECT_EQ(f->name, "buf");

  f = FtraceFormatTable::ParseFieldLine("field:__rel_loc char[] msg;\toffset:8;\tsize:4;\tsigned:0;");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, FtraceFieldKind::kRelLocString);

  f = FtraceFormatTable::ParseFieldLine(
      "field:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, FtraceFieldKind::kFixedArray);
  EXPECT_EQ(f->element_size, 8u);
  EXPECT_EQ(f->name, "args");

  f = FtraceFormatTable::ParseFieldLine(
      "field:u8 ht_cap[(int)sizeof(struct ieee80211_ht_cap)];\toffset:8;\tsize:26;\tsigned:0;");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->name, "ht_cap");
  EXPECT_EQ(f->kind, FtraceFieldKind::kFixedArray);

  f = FtraceFormatTable::ParseFieldLine("field:char name[32 + 1];\toffset:8;\tsize:33;\tsigned:0;");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, FtraceFieldKind::kFixedString);

  f = FtraceFormatTable::ParseFieldLine(
      "field:unsigned long caller;\toffset:16;\tsize:0;\tsigned:0;");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, FtraceFieldKind::kTrailingArray);

  f = FtraceFormatTable::ParseFieldLine("field:const char * fmt;\toffset:8;\tsize:8;\tsigned:0;");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, FtraceFieldKind::kInt);
  EXPECT_EQ(f->name, "fmt");

  // No "signed:" (very old kernels): unsigned.
  f = FtraceFormatTable::ParseFieldLine("field:int x;\toffset:8;\tsize:4;");
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->is_signed);

  for (const char* bad : {"field:int x;\toffset:a;\tsize:4;", "field:int x;\tsize:4;",
                          "field: ;\toffset:1;\tsize:4;", "nonsense", "field:int x[;\toffset:1;\tsize:4;",
                          "field:__data_loc char[] s;\toffset:8;\tsize:2;\tsigned:0;",
                          "field:int x;\toffset:99999999999;\tsize:4;"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(FtraceFormatTable::ParseFieldLine(bad).ok());
  }
}

TEST(FtraceFormatTest, MalformedEventFormats) {
  const char* kNoId = "name: x\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n";
  EXPECT_FALSE(FtraceFormatTable::ParseEventFormat("g", kNoId).ok());
  const char* kBadId = "name: x\nID: 70000\nformat:\n";
  EXPECT_FALSE(FtraceFormatTable::ParseEventFormat("g", kBadId).ok());
  const char* kNoCommonType = "name: x\nID: 7\nformat:\n\tfield:int a;\toffset:0;\tsize:4;\tsigned:1;\n";
  EXPECT_FALSE(FtraceFormatTable::ParseEventFormat("g", kNoCommonType).ok());
  const char* kOk =
      "name: x\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: \"a=%d\", REC->a\n";
  auto e = FtraceFormatTable::ParseEventFormat("g", kOk);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->min_size, 12u);
  EXPECT_EQ(e->group, "g");
}

TEST(FtraceFormatTest, MalformedHeaders) {
  const char* kPage =
      "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
      "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
      "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
  const char* kEvent =
      "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n"
      "\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n"
      "\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";
  auto h = FtraceFormatTable::ParseHeaders(kPage, kEvent);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_TRUE(h->has_time_stamp_type);
  EXPECT_FALSE(FtraceFormatTable::ParseHeaders("", kEvent).ok());
  EXPECT_FALSE(FtraceFormatTable::ParseHeaders(kPage, "").ok());
  std::string commit2 = kPage;
  commit2.replace(commit2.find("size:8;\tsigned:1"), 6, "size:2");
  EXPECT_FALSE(FtraceFormatTable::ParseHeaders(commit2, kEvent).ok());
  std::string other_bits = kEvent;
  other_bits.replace(other_bits.find("5 bits"), 1, "6");
  EXPECT_FALSE(FtraceFormatTable::ParseHeaders(kPage, other_bits).ok());
  // An 8 KiB sub-buffer (buffer_subbuf_size_kb = 8).
  std::string big = kPage;
  big.replace(big.find("4080"), 4, "8176");
  h = FtraceFormatTable::ParseHeaders(big, kEvent);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->page_size(), 8192u);
}

TEST(FtraceFormatTest, LoadAllTrees) {
  struct {
    const char* tree;
    size_t min_events;
  } cases[] = {{kTree34, 400}, {kTree310, 800}, {kTree44, 900}, {kTreeHost, 40}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.tree);
    std::vector<std::string> missing;
    auto t = FtraceFormatTable::LoadAll(c.tree, &missing);
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_GE(t->event_count(), c.min_events);
    EXPECT_TRUE(missing.empty()) << missing.size() << " unparsed, first " << missing[0];
    for (const FtraceEventFormat* e : t->events()) EXPECT_EQ(t->FindById(e->id), e);
  }
}

TEST(FtraceFormatTest, MissingTreeIsAnErrorThatSaysWhy) {
  auto t = FtraceFormatTable::Load("/nonexistent/events", {}, nullptr);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("header_page"), std::string::npos);
}

// Trees copied off devices can lack their header files: the layout is
// taken from what the tree has, and every event still parses. Each real
// tree, copied without header_event, without header_page, and without both,
// gives the header the whole tree gives, and the same events.
TEST(FtraceFormatTest, TreesWithoutHeaderFilesGiveTheSameLayout) {
  const testing::ScratchDir scratch_dir("sluice_headerless_trees");
  const std::string& scratch = scratch_dir.path();
  for (const char* tree : {kTree34, kTree310, kTree44, kTreeHost}) {
    auto whole = FtraceFormatTable::LoadAll(tree, nullptr);
    ASSERT_TRUE(whole.ok()) << whole.status().message();
    for (const char* removed : {"header_event", "header_page", "both"}) {
      SCOPED_TRACE(std::string(tree) + " without " + removed);
      std::filesystem::remove_all(scratch);
      std::filesystem::copy(tree, scratch, std::filesystem::copy_options::recursive);
      const bool no_event = std::string(removed) != "header_page", no_page = std::string(removed) != "header_event";
      if (no_event) std::filesystem::remove(scratch + "/header_event");
      if (no_page) std::filesystem::remove(scratch + "/header_page");
      std::vector<std::string> missing;
      auto t = FtraceFormatTable::LoadAll(scratch, &missing, FtraceFormatTable::Headers::kAssumeIfMissing);
      ASSERT_TRUE(t.ok()) << t.status().message();
      EXPECT_TRUE(missing.empty());
      EXPECT_EQ(t->event_count(), whole->event_count());
      const FtraceHeaderFormat &h = t->header(), &w = whole->header();
      EXPECT_EQ(h.page_size(), w.page_size());
      EXPECT_EQ(h.commit_offset, w.commit_offset);
      EXPECT_EQ(h.commit_size, w.commit_size);
      EXPECT_EQ(h.data_offset, w.data_offset);
      EXPECT_EQ(h.data_size, w.data_size);
      EXPECT_EQ(h.type_len_bits, w.type_len_bits);
      EXPECT_EQ(h.time_delta_bits, w.time_delta_bits);
      EXPECT_EQ(h.padding_type, w.padding_type);
      EXPECT_EQ(h.time_extend_type, w.time_extend_type);
      EXPECT_EQ(h.time_stamp_type, w.time_stamp_type);
      EXPECT_EQ(h.header_page_assumed, no_page);
      EXPECT_EQ(h.header_event_assumed, no_event);
      // With only some events requested, the layout is the same.
      auto some = FtraceFormatTable::Load(scratch, {"sched/sched_switch"}, nullptr,
                                          FtraceFormatTable::Headers::kAssumeIfMissing);
      // The recorder's way (the default) refuses such a tree.
      EXPECT_FALSE(FtraceFormatTable::Load(scratch, {"sched/sched_switch"}, nullptr).ok());
      ASSERT_TRUE(some.ok()) << some.status().message();
      EXPECT_EQ(some->header().commit_size, w.commit_size);
      EXPECT_NE(some->FindByName("sched", "sched_switch"), nullptr);
    }
  }
}

TEST(FtraceFormatTest, ATreeWithNothingToTellTheWordSizeIsRefused) {
  const testing::ScratchDir scratch_dir("sluice_headerless_tiny");
  const std::string& scratch = scratch_dir.path();
  // sched_process_free has no long (sched_switch's prev_state is one).
  std::filesystem::create_directories(scratch + "/sched/sched_process_free");
  std::filesystem::copy_file(std::string(kTree310) + "/sched/sched_process_free/format",
                             scratch + "/sched/sched_process_free/format");
  auto t = FtraceFormatTable::LoadAll(scratch, nullptr, FtraceFormatTable::Headers::kAssumeIfMissing);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("copy events/header_page"), std::string::npos) << t.status().message();
  // With header_page, a missing header_event is no obstacle.
  std::filesystem::copy_file(std::string(kTree310) + "/header_page", scratch + "/header_page");
  t = FtraceFormatTable::LoadAll(scratch, nullptr, FtraceFormatTable::Headers::kAssumeIfMissing);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_TRUE(t->header().header_event_assumed);
}

}  // namespace
}  // namespace sluice
