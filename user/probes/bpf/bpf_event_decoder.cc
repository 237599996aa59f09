#include "user/probes/bpf/bpf_event_decoder.h"

#include <cstring>
#include <string_view>

#include "perfetto/trace/ftrace/ftrace.pb.h"
#include "perfetto/trace/ftrace/ftrace_event.pb.h"
#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "perfetto/trace/ftrace/sched.pb.h"
#include "perfetto/trace/ftrace/task.pb.h"

extern "C" {
#include "bpf/sched.h"
#include "bpf/sluice_record.h"
#include "bpf/trace_marker.h"
}

namespace sluice {
namespace {

namespace pp = perfetto::protos;

// The record layouts are an ABI between the BPF programs and this file.
static_assert(sizeof(sluice_record_header) == 16);
static_assert(sizeof(sluice_cpu_stats) == 64);
static_assert(sizeof(sluice_sched_switch) == 80);
static_assert(offsetof(sluice_sched_switch, prev_state) == 64);
static_assert(sizeof(sluice_sched_wakeup) == 48);
static_assert(sizeof(sluice_sched_process_fork) == 64);
static_assert(sizeof(sluice_sched_process_exec) == 24 + SLUICE_EXEC_FILENAME_LEN);
static_assert(sizeof(sluice_sched_process_exit) == 48);
static_assert(sizeof(sluice_task_rename) == 56);
static_assert(sizeof(sluice_task_newtask) == 48);
static_assert(sizeof(sluice_trace_marker) == 32);

// A fixed char array of the record as a string: up to the first NUL.
template <size_t N>
std::string_view Str(const char (&a)[N]) {
  return std::string_view(a, strnlen(a, N));
}

// Copies the fixed part of a record out of the ring (aligned, and the
// compiler may not assume anything about ring memory).
template <typename T>
bool Load(const uint8_t* rec, size_t size, T* out) {
  if (size < sizeof(T)) return false;
  memcpy(out, rec, sizeof(T));
  return true;
}

void BeginEvent(ProtoWriter* w, const sluice_record_header& h, uint32_t event_field) {
  w->BeginNested(pp::FtraceEventBundle::kEventFieldNumber);
  w->WriteVarInt(pp::FtraceEvent::kTimestampFieldNumber, h.ts);
  w->WriteVarInt(pp::FtraceEvent::kPidFieldNumber, h.pid);
  w->BeginNested(event_field);
}

void EndEvent(ProtoWriter* w) {
  w->EndNested();
  w->EndNested();
}

using Result = BpfEventDecoder::Result;
using DecodeFn = Result (*)(const uint8_t*, size_t, ProtoWriter*);

Result DecodeSwitch(const uint8_t* rec, size_t size, ProtoWriter* w) {
  using E = pp::SchedSwitchFtraceEvent;
  sluice_sched_switch r;
  if (!Load(rec, size, &r)) return Result::kTooShort;
  int64_t state = (r.flags & SLUICE_SWITCH_STATE_IS_FTRACE)
                      ? static_cast<int64_t>(r.prev_state)
                      : BpfEventDecoder::FtracePrevState(
                            static_cast<uint32_t>(r.prev_state), r.prev_exit_state,
                            (r.flags & SLUICE_SWITCH_PREEMPT) != 0);
  BeginEvent(w, r.hdr, pp::FtraceEvent::kSchedSwitchFieldNumber);
  w->WriteString(E::kPrevCommFieldNumber, Str(r.prev_comm));
  w->WriteInt(E::kPrevPidFieldNumber, r.prev_pid);
  w->WriteInt(E::kPrevPrioFieldNumber, r.prev_prio);
  w->WriteInt(E::kPrevStateFieldNumber, state);
  w->WriteString(E::kNextCommFieldNumber, Str(r.next_comm));
  w->WriteInt(E::kNextPidFieldNumber, r.next_pid);
  w->WriteInt(E::kNextPrioFieldNumber, r.next_prio);
  EndEvent(w);
  return Result::kOk;
}

// sched_wakeup, sched_waking and sched_wakeup_new: one record layout, three
// messages with the same field names.
template <typename E, uint32_t kEventField>
Result DecodeWakeup(const uint8_t* rec, size_t size, ProtoWriter* w) {
  sluice_sched_wakeup r;
  if (!Load(rec, size, &r)) return Result::kTooShort;
  BeginEvent(w, r.hdr, kEventField);
  w->WriteString(E::kCommFieldNumber, Str(r.comm));
  w->WriteInt(E::kPidFieldNumber, r.pid);
  w->WriteInt(E::kPrioFieldNumber, r.prio);
  w->WriteInt(E::kTargetCpuFieldNumber, r.target_cpu);
  EndEvent(w);
  return Result::kOk;
}

Result DecodeFork(const uint8_t* rec, size_t size, ProtoWriter* w) {
  using E = pp::SchedProcessForkFtraceEvent;
  sluice_sched_process_fork r;
  if (!Load(rec, size, &r)) return Result::kTooShort;
  BeginEvent(w, r.hdr, pp::FtraceEvent::kSchedProcessForkFieldNumber);
  w->WriteString(E::kParentCommFieldNumber, Str(r.parent_comm));
  w->WriteInt(E::kParentPidFieldNumber, r.parent_pid);
  w->WriteString(E::kChildCommFieldNumber, Str(r.child_comm));
  w->WriteInt(E::kChildPidFieldNumber, r.child_pid);
  EndEvent(w);
  return Result::kOk;
}

Result DecodeExec(const uint8_t* rec, size_t size, ProtoWriter* w) {
  using E = pp::SchedProcessExecFtraceEvent;
  sluice_sched_process_exec r;
  if (!Load(rec, size, &r)) return Result::kTooShort;
  BeginEvent(w, r.hdr, pp::FtraceEvent::kSchedProcessExecFieldNumber);
  w->WriteString(E::kFilenameFieldNumber, Str(r.filename));
  w->WriteInt(E::kPidFieldNumber, r.pid);
  w->WriteInt(E::kOldPidFieldNumber, r.old_pid);
  EndEvent(w);
  return Result::kOk;
}

Result DecodeExit(const uint8_t* rec, size_t size, ProtoWriter* w) {
  using E = pp::SchedProcessExitFtraceEvent;
  sluice_sched_process_exit r;
  if (!Load(rec, size, &r)) return Result::kTooShort;
  BeginEvent(w, r.hdr, pp::FtraceEvent::kSchedProcessExitFieldNumber);
  w->WriteString(E::kCommFieldNumber, Str(r.comm));
  w->WriteInt(E::kPidFieldNumber, r.pid);
  w->WriteInt(E::kTgidFieldNumber, r.tgid);
  w->WriteInt(E::kPrioFieldNumber, r.prio);
  EndEvent(w);
  return Result::kOk;
}

Result DecodeRename(const uint8_t* rec, size_t size, ProtoWriter* w) {
  using E = pp::TaskRenameFtraceEvent;
  sluice_task_rename r;
  if (!Load(rec, size, &r)) return Result::kTooShort;
  BeginEvent(w, r.hdr, pp::FtraceEvent::kTaskRenameFieldNumber);
  w->WriteInt(E::kPidFieldNumber, r.pid);
  w->WriteString(E::kOldcommFieldNumber, Str(r.oldcomm));
  w->WriteString(E::kNewcommFieldNumber, Str(r.newcomm));
  w->WriteInt(E::kOomScoreAdjFieldNumber, r.oom_score_adj);
  EndEvent(w);
  return Result::kOk;
}

Result DecodeNewtask(const uint8_t* rec, size_t size, ProtoWriter* w) {
  using E = pp::TaskNewtaskFtraceEvent;
  sluice_task_newtask r;
  if (!Load(rec, size, &r)) return Result::kTooShort;
  BeginEvent(w, r.hdr, pp::FtraceEvent::kTaskNewtaskFieldNumber);
  w->WriteInt(E::kPidFieldNumber, r.pid);
  w->WriteString(E::kCommFieldNumber, Str(r.comm));
  w->WriteVarInt(E::kCloneFlagsFieldNumber, r.clone_flags);
  w->WriteInt(E::kOomScoreAdjFieldNumber, r.oom_score_adj);
  EndEvent(w);
  return Result::kOk;
}

// ftrace's print: what tracing_mark_write() puts in the ring buffer. The
// kernel copies the payload, replaces it with "<faulted>" if the copy
// faults, and appends '\n' unless the payload already ends with one;
// readers see the buffer up to its first NUL.
Result DecodeMarker(const uint8_t* rec, size_t size, ProtoWriter* w) {
  static constexpr std::string_view kFaulted = "<faulted>";
  sluice_trace_marker r;
  if (!Load(rec, size, &r)) return Result::kTooShort;
  if (r.captured > size - sizeof(r)) return Result::kBadPayload;
  const char* payload = reinterpret_cast<const char*>(rec + sizeof(r));
  size_t n = r.captured;
  if (r.flags & SLUICE_MARKER_READ_FAULT) {
    payload = kFaulted.data();
    n = kFaulted.size();
  }
  bool add_newline = n == 0 || payload[n - 1] != '\n';
  if (const void* nul = memchr(payload, 0, n)) {
    n = static_cast<size_t>(static_cast<const char*>(nul) - payload);
    add_newline = false;
  }
  BeginEvent(w, r.hdr, pp::FtraceEvent::kPrintFieldNumber);
  w->WriteRawVarInt(ProtoWriter::MakeTag(pp::PrintFtraceEvent::kBufFieldNumber,
                                         ProtoWriter::kWireLengthDelimited));
  w->WriteRawVarInt(n + (add_newline ? 1 : 0));
  w->WriteRaw(payload, n);
  if (add_newline) w->WriteRaw("\n", 1);
  EndEvent(w);
  return Result::kOk;
}

// Indexed by enum sluice_record_type.
constexpr DecodeFn kDecoders[SLUICE_REC_TYPE_COUNT] = {
    /* SLUICE_REC_NONE */ nullptr,
    /* SLUICE_REC_SCHED_SWITCH */ DecodeSwitch,
    /* SLUICE_REC_SCHED_WAKEUP */ DecodeWakeup<pp::SchedWakeupFtraceEvent, pp::FtraceEvent::kSchedWakeupFieldNumber>,
    /* SLUICE_REC_SCHED_WAKING */ DecodeWakeup<pp::SchedWakingFtraceEvent, pp::FtraceEvent::kSchedWakingFieldNumber>,
    /* SLUICE_REC_SCHED_WAKEUP_NEW */ DecodeWakeup<pp::SchedWakeupNewFtraceEvent, pp::FtraceEvent::kSchedWakeupNewFieldNumber>,
    /* SLUICE_REC_SCHED_PROCESS_FORK */ DecodeFork,
    /* SLUICE_REC_SCHED_PROCESS_EXEC */ DecodeExec,
    /* SLUICE_REC_SCHED_PROCESS_EXIT */ DecodeExit,
    /* SLUICE_REC_TASK_RENAME */ DecodeRename,
    /* SLUICE_REC_TASK_NEWTASK */ DecodeNewtask,
    /* SLUICE_REC_TRACE_MARKER */ DecodeMarker,
};

// Task state bits of include/linux/sched.h, stable since v5.15 (TASK_FROZEN
// since v6.1; before, that bit was unused).
constexpr uint32_t kTaskUninterruptible = 0x0002;
constexpr uint32_t kTaskNoload = 0x0400;
constexpr uint32_t kTaskIdle = kTaskUninterruptible | kTaskNoload;
constexpr uint32_t kTaskRtlockWait = 0x1000;
constexpr uint32_t kTaskFrozen = 0x8000;
constexpr uint32_t kTaskReport = 0x7f;  // INTERRUPTIBLE..PARKED, EXIT_*
constexpr uint32_t kTaskReportIdle = kTaskReport + 1;
constexpr uint32_t kTaskReportMax = kTaskReportIdle << 1;

}  // namespace

bool BpfEventDecoder::ReadHeader(const uint8_t* record_untrusted, size_t size,
                                 Header* out) {
  sluice_record_header h;
  if (!Load(record_untrusted, size, &h)) return false;
  out->ts = h.ts;
  out->pid = h.pid;
  out->type = h.type;
  out->cpu = h.cpu;
  return true;
}

BpfEventDecoder::Result BpfEventDecoder::Decode(const uint8_t* record_untrusted,
                                                size_t size, ProtoWriter* w) {
  sluice_record_header h;
  if (!Load(record_untrusted, size, &h)) return Result::kTooShort;
  if (h.type >= SLUICE_REC_TYPE_COUNT || kDecoders[h.type] == nullptr)
    return Result::kUnknownType;
  return kDecoders[h.type](record_untrusted, size, w);
}

int64_t BpfEventDecoder::FtracePrevState(uint32_t raw_state, uint32_t exit_state,
                                         bool preempt) {
  if (preempt) return kTaskReportMax;
  uint32_t state = (raw_state | exit_state) & kTaskReport;
  if ((raw_state & kTaskIdle) == kTaskIdle) state = kTaskReportIdle;
  if ((raw_state & kTaskRtlockWait) || (raw_state & kTaskFrozen))
    state = kTaskUninterruptible;
  // fls(): 1-based index of the highest set bit, 0 for 0.
  int index = state ? 32 - __builtin_clz(state) : 0;
  return index ? (int64_t{1} << (index - 1)) : 0;
}

}  // namespace sluice
