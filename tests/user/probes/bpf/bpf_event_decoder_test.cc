#include "user/probes/bpf/bpf_event_decoder.h"

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"

extern "C" {
#include "bpf/sched.h"
#include "bpf/trace_marker.h"
}

namespace sluice {
namespace {

namespace pp = perfetto::protos;
using Result = BpfEventDecoder::Result;

template <typename T>
std::vector<uint8_t> Bytes(const T& rec, const std::string& tail = "") {
  std::vector<uint8_t> v(sizeof(T) + tail.size());
  memcpy(v.data(), &rec, sizeof(T));
  memcpy(v.data() + sizeof(T), tail.data(), tail.size());
  return v;
}

sluice_record_header Header(uint16_t type) {
  sluice_record_header h = {};
  h.ts = 123456789;
  h.pid = 42;
  h.type = type;
  h.cpu = 1;
  return h;
}

// Decodes one record into a bundle and parses it back.
Result Decode(const std::vector<uint8_t>& rec, pp::FtraceEvent* out) {
  HeapProtoWriter w;
  Result r = BpfEventDecoder::Decode(rec.data(), rec.size(), w.writer());
  std::string bytes = w.Release();
  if (r != Result::kOk) {
    EXPECT_TRUE(bytes.empty()) << "wrote bytes for a rejected record";
    return r;
  }
  pp::FtraceEventBundle bundle;
  EXPECT_TRUE(bundle.ParseFromString(bytes));
  EXPECT_EQ(bundle.event_size(), 1);
  if (bundle.event_size() == 1) *out = bundle.event(0);
  return r;
}

TEST(BpfEventDecoderTest, SchedSwitchRawState) {
  sluice_sched_switch r = {};
  r.hdr = Header(SLUICE_REC_SCHED_SWITCH);
  strcpy(r.prev_comm, "prev");
  memcpy(r.next_comm, "0123456789abcdef", 16);  // no NUL: bounded by the array
  r.prev_pid = 42;
  r.prev_prio = 120;
  r.next_pid = 7;
  r.next_prio = 100;
  r.prev_state = 0x1;  // TASK_INTERRUPTIBLE
  pp::FtraceEvent e;
  ASSERT_EQ(Decode(Bytes(r), &e), Result::kOk);
  EXPECT_EQ(e.timestamp(), 123456789u);
  EXPECT_EQ(e.pid(), 42u);
  ASSERT_TRUE(e.has_sched_switch());
  EXPECT_EQ(e.sched_switch().prev_comm(), "prev");
  EXPECT_EQ(e.sched_switch().next_comm(), "0123456789abcdef");
  EXPECT_EQ(e.sched_switch().prev_pid(), 42);
  EXPECT_EQ(e.sched_switch().prev_prio(), 120);
  EXPECT_EQ(e.sched_switch().prev_state(), 1);
  EXPECT_EQ(e.sched_switch().next_pid(), 7);
  EXPECT_EQ(e.sched_switch().next_prio(), 100);

  r.flags = SLUICE_SWITCH_PREEMPT;
  ASSERT_EQ(Decode(Bytes(r), &e), Result::kOk);
  EXPECT_EQ(e.sched_switch().prev_state(), 0x100);  // TASK_REPORT_MAX
}

TEST(BpfEventDecoderTest, SchedSwitchStateAlreadyEncoded) {
  sluice_sched_switch r = {};
  r.hdr = Header(SLUICE_REC_SCHED_SWITCH);
  r.prev_state = 0x100;
  r.flags = SLUICE_SWITCH_STATE_IS_FTRACE;
  pp::FtraceEvent e;
  ASSERT_EQ(Decode(Bytes(r), &e), Result::kOk);
  EXPECT_EQ(e.sched_switch().prev_state(), 0x100);
}

// Values as the kernel's __trace_sched_switch_state() computes them.
TEST(BpfEventDecoderTest, FtracePrevState) {
  EXPECT_EQ(BpfEventDecoder::FtracePrevState(0x0, 0, false), 0);       // R
  EXPECT_EQ(BpfEventDecoder::FtracePrevState(0x1, 0, false), 0x1);     // S
  EXPECT_EQ(BpfEventDecoder::FtracePrevState(0x2, 0, false), 0x2);     // D
  EXPECT_EQ(BpfEventDecoder::FtracePrevState(0x102, 0, false), 0x2);   // D|WAKEKILL
  EXPECT_EQ(BpfEventDecoder::FtracePrevState(0x402, 0, false), 0x80);  // TASK_IDLE -> I
  EXPECT_EQ(BpfEventDecoder::FtracePrevState(0x40, 0, false), 0x40);   // P
  EXPECT_EQ(BpfEventDecoder::FtracePrevState(0x80, 0x20, false), 0x20);  // dead, zombie
  EXPECT_EQ(BpfEventDecoder::FtracePrevState(0x1000, 0, false), 0x2);  // RTLOCK_WAIT -> D
  EXPECT_EQ(BpfEventDecoder::FtracePrevState(0x8001, 0, false), 0x2);  // FROZEN -> D
  EXPECT_EQ(BpfEventDecoder::FtracePrevState(0x1, 0, true), 0x100);    // preempted
}

TEST(BpfEventDecoderTest, WakeupFamily) {
  for (uint16_t type : {SLUICE_REC_SCHED_WAKEUP, SLUICE_REC_SCHED_WAKING, SLUICE_REC_SCHED_WAKEUP_NEW}) {
    sluice_sched_wakeup r = {};
    r.hdr = Header(type);
    strcpy(r.comm, "wakee");
    r.pid = 9;
    r.prio = 120;
    r.target_cpu = 1;
    pp::FtraceEvent e;
    ASSERT_EQ(Decode(Bytes(r), &e), Result::kOk);
    if (type == SLUICE_REC_SCHED_WAKEUP) {
      ASSERT_TRUE(e.has_sched_wakeup());
      EXPECT_EQ(e.sched_wakeup().comm(), "wakee");
      EXPECT_EQ(e.sched_wakeup().target_cpu(), 1);
      EXPECT_FALSE(e.sched_wakeup().has_success());
    } else if (type == SLUICE_REC_SCHED_WAKING) {
      ASSERT_TRUE(e.has_sched_waking());
      EXPECT_EQ(e.sched_waking().pid(), 9);
      EXPECT_EQ(e.sched_waking().prio(), 120);
    } else {
      ASSERT_TRUE(e.has_sched_wakeup_new());
      EXPECT_EQ(e.sched_wakeup_new().pid(), 9);
    }
  }
}

TEST(BpfEventDecoderTest, ProcessAndTaskEvents) {
  pp::FtraceEvent e;
  sluice_sched_process_fork fork = {};
  fork.hdr = Header(SLUICE_REC_SCHED_PROCESS_FORK);
  strcpy(fork.parent_comm, "bash");
  strcpy(fork.child_comm, "bash");
  fork.parent_pid = 10;
  fork.child_pid = 11;
  ASSERT_EQ(Decode(Bytes(fork), &e), Result::kOk);
  EXPECT_EQ(e.sched_process_fork().parent_pid(), 10);
  EXPECT_EQ(e.sched_process_fork().child_pid(), 11);
  EXPECT_EQ(e.sched_process_fork().child_comm(), "bash");

  sluice_sched_process_exec exec = {};
  exec.hdr = Header(SLUICE_REC_SCHED_PROCESS_EXEC);
  strcpy(exec.filename, "/usr/bin/true");
  exec.pid = 11;
  exec.old_pid = 11;
  ASSERT_EQ(Decode(Bytes(exec), &e), Result::kOk);
  EXPECT_EQ(e.sched_process_exec().filename(), "/usr/bin/true");
  EXPECT_EQ(e.sched_process_exec().old_pid(), 11);

  sluice_sched_process_exit exit = {};
  exit.hdr = Header(SLUICE_REC_SCHED_PROCESS_EXIT);
  strcpy(exit.comm, "true");
  exit.pid = 11;
  exit.tgid = 11;
  exit.prio = 120;
  ASSERT_EQ(Decode(Bytes(exit), &e), Result::kOk);
  EXPECT_EQ(e.sched_process_exit().comm(), "true");
  EXPECT_EQ(e.sched_process_exit().tgid(), 11);

  sluice_task_rename rename = {};
  rename.hdr = Header(SLUICE_REC_TASK_RENAME);
  strcpy(rename.oldcomm, "old");
  strcpy(rename.newcomm, "new");
  rename.pid = 5;
  rename.oom_score_adj = -1000;
  ASSERT_EQ(Decode(Bytes(rename), &e), Result::kOk);
  EXPECT_EQ(e.task_rename().oldcomm(), "old");
  EXPECT_EQ(e.task_rename().newcomm(), "new");
  EXPECT_EQ(e.task_rename().oom_score_adj(), -1000);

  sluice_task_newtask nt = {};
  nt.hdr = Header(SLUICE_REC_TASK_NEWTASK);
  strcpy(nt.comm, "parent");
  nt.pid = 77;
  nt.clone_flags = 0x3d0f00;
  ASSERT_EQ(Decode(Bytes(nt), &e), Result::kOk);
  EXPECT_EQ(e.task_newtask().pid(), 77);
  EXPECT_EQ(e.task_newtask().clone_flags(), 0x3d0f00u);
}

sluice_trace_marker Marker(uint32_t captured, uint32_t len, uint16_t flags = 0) {
  sluice_trace_marker m = {};
  m.hdr = Header(SLUICE_REC_TRACE_MARKER);
  m.tgid = 42;
  m.len = len;
  m.captured = captured;
  m.flags = flags;
  return m;
}

std::string PrintBuf(const std::vector<uint8_t>& rec) {
  pp::FtraceEvent e;
  EXPECT_EQ(Decode(rec, &e), Result::kOk);
  EXPECT_TRUE(e.has_print());
  return e.print().buf();
}

TEST(BpfEventDecoderTest, MarkerBecomesPrintLikeFtrace) {
  // ftrace appends '\n' unless there is one.
  EXPECT_EQ(PrintBuf(Bytes(Marker(8, 8), "B|42|foo")), "B|42|foo\n");
  EXPECT_EQ(PrintBuf(Bytes(Marker(4, 4), "E|1\n")), "E|1\n");
  // Record padding after the payload (size classes) is ignored.
  EXPECT_EQ(PrintBuf(Bytes(Marker(3, 3), std::string("C|1") + std::string(93, '\0'))), "C|1\n");
  // Readers stop at a NUL; the appended newline comes after it.
  EXPECT_EQ(PrintBuf(Bytes(Marker(7, 7), std::string("abc\0def", 7))), "abc");
  // Truncated: the captured part, newline appended.
  EXPECT_EQ(PrintBuf(Bytes(Marker(4, 5000), "abcd")), "abcd\n");
  // Unreadable payload: ftrace writes "<faulted>".
  EXPECT_EQ(PrintBuf(Bytes(Marker(0, 12, SLUICE_MARKER_READ_FAULT))), "<faulted>\n");
}

TEST(BpfEventDecoderTest, BadRecordsWriteNothing) {
  pp::FtraceEvent e;
  // Payload claims more than the record holds.
  EXPECT_EQ(Decode(Bytes(Marker(10, 10), "short"), &e), Result::kBadPayload);
  // Shorter than the header, than its struct.
  EXPECT_EQ(Decode(std::vector<uint8_t>(8, 0), &e), Result::kTooShort);
  sluice_sched_switch sw = {};
  sw.hdr = Header(SLUICE_REC_SCHED_SWITCH);
  std::vector<uint8_t> rec = Bytes(sw);
  rec.resize(rec.size() - 1);
  EXPECT_EQ(Decode(rec, &e), Result::kTooShort);
  // Unknown types.
  for (uint16_t type : {uint16_t{0}, uint16_t{SLUICE_REC_TYPE_COUNT}, uint16_t{0xffff}}) {
    sluice_sched_switch r = {};
    r.hdr = Header(type);
    EXPECT_EQ(Decode(Bytes(r), &e), Result::kUnknownType) << type;
  }
}

TEST(BpfEventDecoderTest, ReadHeader) {
  sluice_sched_wakeup r = {};
  r.hdr = Header(SLUICE_REC_SCHED_WAKING);
  std::vector<uint8_t> rec = Bytes(r);
  BpfEventDecoder::Header h;
  ASSERT_TRUE(BpfEventDecoder::ReadHeader(rec.data(), rec.size(), &h));
  EXPECT_EQ(h.ts, 123456789u);
  EXPECT_EQ(h.pid, 42u);
  EXPECT_EQ(h.type, SLUICE_REC_SCHED_WAKING);
  EXPECT_EQ(h.cpu, 1);
  EXPECT_FALSE(BpfEventDecoder::ReadHeader(rec.data(), 15, &h));
}

}  // namespace
}  // namespace sluice
