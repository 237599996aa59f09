#include "user/probes/ftrace/ftrace_compact_sched.h"

#include <iterator>
#include <string>

#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "user/probes/ftrace/ftrace_event_translator.h"

namespace sluice {

namespace {

using CompactSched = perfetto::protos::FtraceEventBundle_CompactSched;

bool GetInt(const FtraceEventFormat& e, const char* name, bool allow_8,
            CompactSchedFormat::IntField* out, std::string* why_not) {
  const FtraceFieldFormat* f = e.FindField(name);
  if (f == nullptr || f->kind != FtraceFieldKind::kInt ||
      !(f->size == 4 || (allow_8 && f->size == 8))) {
    if (why_not) *why_not = e.name + "." + name + " is missing or not a 4-byte integer";
    return false;
  }
  out->offset = f->offset;
  out->size = f->size;
  out->is_signed = f->is_signed;
  return true;
}

bool GetComm(const FtraceEventFormat& e, const char* name, uint32_t* offset,
             std::string* why_not) {
  const FtraceFieldFormat* f = e.FindField(name);
  if (f == nullptr || f->kind != FtraceFieldKind::kFixedString ||
      f->size != CompactSchedFormat::kCommSize) {
    if (why_not) *why_not = e.name + "." + name + " is missing or not char[16]";
    return false;
  }
  *offset = f->offset;
  return true;
}

}  // namespace

// static
CompactSchedFormat CompactSchedFormat::FromTable(const FtraceFormatTable& table,
                                                 std::string* why_not) {
  CompactSchedFormat f;
  if (const FtraceEventFormat* e = table.FindByName("sched", "sched_switch")) {
    f.switch_id = e->id;
    f.switch_min_size = e->min_size;
    f.switch_valid = GetInt(*e, "prev_state", true, &f.prev_state, why_not) &&
                     GetInt(*e, "next_pid", false, &f.next_pid, why_not) &&
                     GetInt(*e, "next_prio", false, &f.next_prio, why_not) &&
                     GetComm(*e, "next_comm", &f.next_comm_offset, why_not);
  }
  if (const FtraceEventFormat* e = table.FindByName("sched", "sched_waking")) {
    f.waking_id = e->id;
    f.waking_min_size = e->min_size;
    f.waking_valid = GetInt(*e, "pid", false, &f.waking_pid, why_not) &&
                     GetInt(*e, "target_cpu", false, &f.waking_target_cpu, why_not) &&
                     GetInt(*e, "prio", false, &f.waking_prio, why_not) &&
                     GetComm(*e, "comm", &f.waking_comm_offset, why_not);
    const FtraceFieldFormat* flags = e->FindField("common_flags");
    if (flags && flags->kind == FtraceFieldKind::kInt) {
      f.waking_flags.offset = flags->offset;
      f.waking_flags.size = flags->size;
    }
  }
  return f;
}

CompactSchedBuffer::CompactSchedBuffer() = default;

uint32_t CompactSchedBuffer::Intern(const uint8_t* comm_untrusted, uint32_t available) {
  // Key: the bytes up to the first NUL, zero-padded to 16, as two words, so
  // that stale bytes after the NUL (older kernels do not clear them) do not
  // make equal comms differ. Read as words straight from the record (no
  // byte copies that the word loads would have to wait for).
  uint64_t a = 0, b = 0;
  const bool whole = available >= CompactSchedFormat::kCommSize;
  if (whole) {
    memcpy(&a, comm_untrusted, 8);
    memcpy(&b, comm_untrusted + 8, 8);
    // The same 16 bytes as the last comm's key: the same comm, without
    // hashing (last_key_).
    if (a == last_key_[0] && b == last_key_[1] && last_index_ >= 0) return static_cast<uint32_t>(last_index_);
  } else {
    uint8_t tmp[CompactSchedFormat::kCommSize] = {};
    memcpy(tmp, comm_untrusted, available);
    memcpy(&a, tmp, 8);
    memcpy(&b, tmp + 8, 8);
  }
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  uint32_t len = 16;
  if (uint64_t z = (a - kOnes) & ~a & kHighs) {
    len = static_cast<uint32_t>(__builtin_ctzll(z)) / 8;
    a &= len ? ~0ull >> (64 - 8 * len) : 0;
    b = 0;
  } else if (uint64_t zb = (b - kOnes) & ~b & kHighs) {
    uint32_t n = static_cast<uint32_t>(__builtin_ctzll(zb)) / 8;
    len = 8 + n;
    b &= n ? ~0ull >> (64 - 8 * n) : 0;
  }
  uint64_t h = (a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full);
  h ^= h >> 29;
  size_t slot = static_cast<size_t>(h) & (kHashSlots - 1);
  uint16_t index;
  for (;;) {
    Slot& s = slots_[slot];
    if (s.generation != generation_) {
      index = static_cast<uint16_t>(comm_count_++);
      comms_[index][0] = a;
      comms_[index][1] = b;
      comm_len_[index] = static_cast<uint8_t>(len);
      s.generation = generation_;
      s.index = index;
      break;
    }
    if (comms_[s.index][0] == a && comms_[s.index][1] == b) {
      index = s.index;
      break;
    }
    slot = (slot + 1) & (kHashSlots - 1);
  }
  if (whole) {
    last_key_[0] = a;
    last_key_[1] = b;
    last_index_ = index;
  }
  return index;
}

void CompactSchedBuffer::AppendSwitch(const CompactSchedFormat& f, const FtraceRecord& r) {
  using T = FtraceEventTranslator;
  switch_ts_.Append(r.timestamp - switch_last_ts_);
  switch_last_ts_ = r.timestamp;
  switch_prev_state_.Append(
      T::ReadInt(r.data, r.size, f.prev_state.offset, f.prev_state.size, f.prev_state.is_signed));
  switch_next_pid_.Append(
      T::ReadInt(r.data, r.size, f.next_pid.offset, f.next_pid.size, f.next_pid.is_signed));
  switch_next_prio_.Append(
      T::ReadInt(r.data, r.size, f.next_prio.offset, f.next_prio.size, f.next_prio.is_signed));
  uint32_t avail = f.next_comm_offset < r.size ? r.size - f.next_comm_offset : 0;
  switch_comm_index_.Append(Intern(r.data + f.next_comm_offset, avail));
  switch_count_++;
}

void CompactSchedBuffer::AppendWaking(const CompactSchedFormat& f, const FtraceRecord& r) {
  using T = FtraceEventTranslator;
  waking_ts_.Append(r.timestamp - waking_last_ts_);
  waking_last_ts_ = r.timestamp;
  waking_pid_.Append(
      T::ReadInt(r.data, r.size, f.waking_pid.offset, f.waking_pid.size, f.waking_pid.is_signed));
  waking_target_cpu_.Append(T::ReadInt(r.data, r.size, f.waking_target_cpu.offset,
                                       f.waking_target_cpu.size, f.waking_target_cpu.is_signed));
  waking_prio_.Append(T::ReadInt(r.data, r.size, f.waking_prio.offset, f.waking_prio.size,
                                 f.waking_prio.is_signed));
  uint32_t avail = f.waking_comm_offset < r.size ? r.size - f.waking_comm_offset : 0;
  waking_comm_index_.Append(Intern(r.data + f.waking_comm_offset, avail));
  if (f.waking_flags.size)
    waking_flags_.Append(
        T::ReadInt(r.data, r.size, f.waking_flags.offset, f.waking_flags.size, false));
  waking_count_++;
}

void CompactSchedBuffer::WriteAndReset(ProtoWriter* w) {
  if (!empty()) {
    w->BeginNested(perfetto::protos::FtraceEventBundle::kCompactSchedFieldNumber);
    for (size_t i = 0; i < comm_count_; i++)
      w->WriteBytes(CompactSched::kInternTableFieldNumber, comms_[i], comm_len_[i]);  // LE words.
    auto column = [w](uint32_t field, const Column& c) {
      if (c.size) w->WriteBytes(field, c.bytes, c.size);
    };
    column(CompactSched::kSwitchTimestampFieldNumber, switch_ts_);
    column(CompactSched::kSwitchPrevStateFieldNumber, switch_prev_state_);
    column(CompactSched::kSwitchNextPidFieldNumber, switch_next_pid_);
    column(CompactSched::kSwitchNextPrioFieldNumber, switch_next_prio_);
    column(CompactSched::kSwitchNextCommIndexFieldNumber, switch_comm_index_);
    column(CompactSched::kWakingTimestampFieldNumber, waking_ts_);
    column(CompactSched::kWakingPidFieldNumber, waking_pid_);
    column(CompactSched::kWakingTargetCpuFieldNumber, waking_target_cpu_);
    column(CompactSched::kWakingPrioFieldNumber, waking_prio_);
    column(CompactSched::kWakingCommIndexFieldNumber, waking_comm_index_);
    column(CompactSched::kWakingCommonFlagsFieldNumber, waking_flags_);
    w->EndNested();
  }
  Reset();
}

CompactSchedBuffer::Mark CompactSchedBuffer::GetMark() const {
  Mark m;
  m.switch_count = switch_count_;
  m.waking_count = waking_count_;
  m.switch_last_ts = switch_last_ts_;
  m.waking_last_ts = waking_last_ts_;
  const Column* cols[] = {&switch_ts_,  &switch_prev_state_, &switch_next_pid_,
                          &switch_next_prio_, &switch_comm_index_, &waking_ts_,
                          &waking_pid_, &waking_target_cpu_, &waking_prio_,
                          &waking_comm_index_, &waking_flags_};
  static_assert(std::size(cols) == std::size(Mark{}.sizes));
  for (size_t i = 0; i < std::size(cols); i++) m.sizes[i] = cols[i]->size;
  return m;
}

void CompactSchedBuffer::Rollback(const Mark& m) {
  switch_count_ = m.switch_count;
  waking_count_ = m.waking_count;
  switch_last_ts_ = m.switch_last_ts;
  waking_last_ts_ = m.waking_last_ts;
  Column* cols[] = {&switch_ts_,  &switch_prev_state_, &switch_next_pid_,
                    &switch_next_prio_, &switch_comm_index_, &waking_ts_,
                    &waking_pid_, &waking_target_cpu_, &waking_prio_,
                    &waking_comm_index_, &waking_flags_};
  for (size_t i = 0; i < std::size(cols); i++) cols[i]->size = m.sizes[i];
}

void CompactSchedBuffer::Reset() {
  switch_count_ = waking_count_ = comm_count_ = 0;
  last_index_ = -1;
  switch_last_ts_ = waking_last_ts_ = 0;
  for (Column* c : {&switch_ts_, &switch_prev_state_, &switch_next_pid_, &switch_next_prio_,
                    &switch_comm_index_, &waking_ts_, &waking_pid_, &waking_target_cpu_,
                    &waking_prio_, &waking_comm_index_, &waking_flags_})
    c->size = 0;
  if (++generation_ == 0) {
    // Wrapped: clear so that no stale slot matches.
    for (Slot& s : slots_) s = Slot();
    generation_ = 1;
  }
}

}  // namespace sluice
