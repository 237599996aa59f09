// Compact encoding of sched_switch and sched_waking (FtraceConfig
// compact_sched), Perfetto's FtraceEventBundle.CompactSched.
//
// The two events make up most of a scheduling trace. Instead of one
// FtraceEvent message each, a bundle carries them as columns (structure of
// arrays), each a packed repeated varint field, plus a per-bundle table of
// unique comm strings:
//
//   compact_sched {
//     intern_table: "swapper/0", "kworker/1:2", ...   (unique comms, bundle)
//     switch_timestamp:       t0, t1-t0, t2-t1, ...     (delta from previous
//     switch_prev_state:      ...                        switch in the bundle;
//     switch_next_pid:        ...                        first is absolute)
//     switch_next_prio:       ...
//     switch_next_comm_index: index into intern_table
//     waking_timestamp / waking_pid / waking_target_cpu / waking_prio /
//     waking_comm_index / waking_common_flags      (same, for sched_waking;
//                                                   own delta chain)
//   }
//
// The columns are filled while pages are parsed and written once when the
// bundle ends. Field offsets come from the format files; the compact form is
// used only if the formats match what it can hold (integers of 4/8 bytes,
// 16-byte comm), otherwise the events go out as ordinary FtraceEvents.
//
// Memory: fixed-size columns allocated once per encoder (per CPU); the hot
// path (Append*) is allocation-free. When a column or the intern table is
// full, the encoder ends the bundle (full()) and starts a new one.
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_COMPACT_SCHED_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_COMPACT_SCHED_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "shm/proto_writer.h"
#include "user/probes/ftrace/ftrace_format.h"
#include "user/probes/ftrace/ftrace_page_parser.h"

namespace sluice {

struct CompactSchedFormat {
  struct IntField {
    uint32_t offset = 0;
    uint32_t size = 0;
    bool is_signed = false;
  };
  static constexpr uint32_t kCommSize = 16;

  bool switch_valid = false;
  uint32_t switch_id = 0;
  uint32_t switch_min_size = 0;
  IntField prev_state, next_pid, next_prio;
  uint32_t next_comm_offset = 0;

  bool waking_valid = false;
  uint32_t waking_id = 0;
  uint32_t waking_min_size = 0;
  IntField waking_pid, waking_target_cpu, waking_prio, waking_flags;
  uint32_t waking_comm_offset = 0;

  // Looks up sched/sched_switch and sched/sched_waking in `table` and checks
  // their fields by name. `why_not` (optional) says what did not fit.
  static CompactSchedFormat FromTable(const FtraceFormatTable& table,
                                      std::string* why_not = nullptr);
};

class CompactSchedBuffer {
 public:
  // Events per column before the bundle must end (a 4 KiB page holds at most
  // ~60 sched_switch or ~100 sched_waking records).
  static constexpr size_t kMaxEvents = 1024;
  // Unique comms per bundle before it must end; the encoder ends bundles
  // earlier, at a page boundary, past kSoftMaxComms (cheaper interning).
  static constexpr size_t kMaxComms = 512;
  static constexpr size_t kSoftMaxComms = 64;

  CompactSchedBuffer();

  bool empty() const { return switch_count_ == 0 && waking_count_ == 0; }
  // True if one more event of either kind might not fit.
  bool full() const {
    return switch_count_ >= kMaxEvents || waking_count_ >= kMaxEvents ||
           comm_count_ >= kMaxComms;
  }
  size_t switch_count() const { return switch_count_; }
  size_t waking_count() const { return waking_count_; }
  size_t comm_count() const { return comm_count_; }

  // Hot path, allocation-free. The caller checked full() and that the record
  // is at least the format's min size.
  void AppendSwitch(const CompactSchedFormat& f, const FtraceRecord& r);
  void AppendWaking(const CompactSchedFormat& f, const FtraceRecord& r);

  // A point to come back to (the encoder undoes a malformed page). Comms
  // interned since stay in the table (unused entries are harmless).
  struct Mark {
    size_t switch_count = 0, waking_count = 0;
    uint64_t switch_last_ts = 0, waking_last_ts = 0;
    size_t sizes[11] = {};
  };
  Mark GetMark() const;
  void Rollback(const Mark& mark);

  // Writes FtraceEventBundle.compact_sched (if not empty) and resets.
  void WriteAndReset(ProtoWriter* writer);
  void Reset();

 private:
  struct Column {
    uint8_t bytes[kMaxEvents * 10];
    size_t size = 0;
    void Append(uint64_t v) {
      size = static_cast<size_t>(ProtoWriter::EncodeVarInt(v, bytes + size) - bytes);
    }
  };
  uint32_t Intern(const uint8_t* comm_untrusted, uint32_t available);

  size_t switch_count_ = 0;
  uint64_t switch_last_ts_ = 0;
  Column switch_ts_, switch_prev_state_, switch_next_pid_, switch_next_prio_,
      switch_comm_index_;
  size_t waking_count_ = 0;
  uint64_t waking_last_ts_ = 0;
  Column waking_ts_, waking_pid_, waking_target_cpu_, waking_prio_, waking_comm_index_,
      waking_flags_;

  // Intern table: comms (NUL-padded to 16 bytes) and an open-addressing
  // index; slots are valid only if their generation is the current one, so
  // Reset() does not clear the index.
  static constexpr size_t kHashSlots = 2048;  // power of two, > 2 * kMaxComms
  struct Slot {
    uint32_t generation = 0;
    uint16_t index = 0;
  };
  size_t comm_count_ = 0;
  uint32_t generation_ = 1;
  uint64_t comms_[kMaxComms][2];  // The 16 comm bytes (little-endian words).
  static_assert(CompactSchedFormat::kCommSize == 16);
  uint8_t comm_len_[kMaxComms];
  Slot slots_[kHashSlots];
  // The last comm interned (its key: NUL-masked) and its index; -1: none
  // in this bundle. A record whose 16 bytes equal the key is that comm:
  // kernels that zero the bytes after the NUL hit it for every repeat,
  // older ones with stale bytes take the hash path. Keeping the record's
  // unmasked bytes instead cost 5-10% on ftrace_page_bench.
  uint64_t last_key_[2] = {};
  int32_t last_index_ = -1;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_COMPACT_SCHED_H_
