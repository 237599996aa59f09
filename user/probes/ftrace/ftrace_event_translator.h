// FtraceEventTranslator: turns one ftrace record into one FtraceEvent
// (perfetto.protos, field `event` of FtraceEventBundle), field by field, as
// the event's format file describes it.
//
// Mapping, built once from the FtraceFormatTable and the generated proto
// descriptors (setup, not hot path):
//   - An event whose NAME (or GROUP_NAME: sde_tracing_mark_write) is a
//     field of FtraceEvent with a message type (sched_switch ->
//     FtraceEvent.sched_switch = 4, SchedSwitchFtraceEvent) is a *known*
//     event (FtraceEventHasOwnMessage). Each of its kernel fields whose NAME is a field of
//     that message (prev_comm -> SchedSwitchFtraceEvent.prev_comm = 1) is
//     copied when the kinds agree: kernel strings (char[N], char[],
//     __data_loc/__rel_loc char[]) to string/bytes fields; kernel integers to
//     integer fields (read at the format's offset and size, sign-extended if
//     the format says signed); fixed integer arrays to repeated integer
//     fields (raw_syscalls sys_enter.args). No offset is hard-coded: adding a
//     message to the protos maps a new event without code here.
//   - Any other event is written as GenericFtraceEvent: event_name and one
//     Field per non-common field (name + str_value / int_value / uint_value;
//     arrays are left out).
//   - An event of sluice's kprobe groups (sluice_kprobes, sluice_kretprobes:
//     FtraceSettings's) is a KprobeEvent (name, type), as upstream writes
//     probe hits.
//   - Every event gets FtraceEvent.timestamp and pid (common_pid);
//     sched_waking also common_flags (the irq/softirq context of the waker).
//
// Hot path: WriteEvent()/EncodeEvent() are allocation-free; they read the record through
// bounds-checked loads (the record is untrusted kernel memory) and writes
// through ProtoWriter. Names of generic fields are pre-encoded at setup.
//
// Thread-safety: immutable after construction.
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_EVENT_TRANSLATOR_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_EVENT_TRANSLATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shm/proto_writer.h"
#include "user/probes/ftrace/ftrace_format.h"
#include "user/probes/ftrace/ftrace_page_parser.h"

namespace sluice {

// How one kernel field is written.
struct FtraceFieldTranslation {
  enum class Wire : uint8_t {
    kVarInt,          // int32/int64/uint32/uint64/bool/enum
    kZigZag,          // sint32/sint64
    kString,          // string/bytes
    kRepeatedVarInt,  // repeated integer from a fixed array
    kGenericString,   // GenericFtraceEvent.Field.str_value
    kGenericInt,      // GenericFtraceEvent.Field.int_value
    kGenericUint,     // GenericFtraceEvent.Field.uint_value
  };
  const FtraceFieldFormat* format = nullptr;
  uint32_t proto_field = 0;   // Field number in the event message.
  std::string proto_name;     // "SchedSwitchFtraceEvent.prev_comm", for tools.
  Wire wire = Wire::kVarInt;
  // GenericFtraceEvent.Field.name, pre-encoded (tag, length, bytes).
  std::string generic_name_bytes;
};

// The hot-path form of one FtraceFieldTranslation: what to read and the
// pre-encoded tag to write, in 24 bytes.
struct FtraceFieldOp {
  enum Op : uint8_t {
    kU8, kU16, kU32, kU64,  // unsigned integer -> varint
    kS8, kS16, kS32,        // signed integer (sign-extended) -> varint
    kZigZag,                // signed/unsigned integer -> sint (zigzag)
    kFixedString,           // char[N] -> string
    kString,                // char[] / __data_loc / __rel_loc -> string
    kRepeated,              // integer array -> repeated varint
    kGeneric,               // GenericFtraceEvent.Field
  };
  uint32_t offset = 0;
  uint32_t size = 0;
  Op op = kU64;
  uint8_t tag_size = 0;
  uint8_t element_size = 0;
  bool is_signed = false;
  uint8_t tag[4] = {};  // Pre-encoded tag of the proto field.
  const FtraceFieldTranslation* field = nullptr;  // kString, kGeneric.
};

struct FtraceEventTranslation {
  const FtraceEventFormat* format = nullptr;
  // FtraceEvent oneof field number: the known event's, or generic's.
  uint32_t proto_field = 0;
  std::string proto_name;  // "FtraceEvent.sched_switch" / "FtraceEvent.generic"
  bool generic = false;
  // common_pid, from the format (absent: size 0). common_flags is not
  // written on full events: upstream's recorder never writes
  // FtraceEvent.common_flags (its proto calls the field a placeholder), and
  // upstream's trace processor reads it as a second event. compact_sched
  // carries sched_waking's flags in its own column.
  uint32_t pid_offset = 0, pid_size = 0;
  std::vector<FtraceFieldTranslation> fields;
  // The same, as the hot path reads it (points into `fields`).
  std::vector<FtraceFieldOp> ops;
  // Pre-encoded tag of the FtraceEvent field `proto_field`.
  uint8_t event_tag[4] = {};
  uint8_t event_tag_size = 0;
  // Fields every event of the kind carries, pre-encoded, written first:
  // GenericFtraceEvent.event_name; KprobeEvent's name and type.
  std::string prefix_bytes;
  // Upper bound of the encoded event message without its variable-length
  // strings, and the number of strings whose length is bounded only by the
  // record (char[] to the end, __data_loc, __rel_loc): the encoded size is at
  // most max_fixed_bytes + dynamic_strings * record size.
  uint32_t max_fixed_bytes = 0;
  uint32_t dynamic_strings = 0;
  // Kernel fields that are not written, and why (for `sluice ftrace-formats`).
  std::vector<std::pair<const FtraceFieldFormat*, std::string>> skipped;
};

// Whether events of group/name are written as a message of their own (or
// as a KprobeEvent), not as GenericFtraceEvent.
bool FtraceEventHasOwnMessage(std::string_view group, std::string_view name);

class FtraceEventTranslator {
 public:
  // Builds a translation for every event in `table`, which must outlive the
  // translator.
  explicit FtraceEventTranslator(const FtraceFormatTable* table);

  const FtraceFormatTable& table() const { return *table_; }

  // O(1). Hot path.
  const FtraceEventTranslation* Find(uint32_t id) const {
    return id < by_id_.size() ? by_id_[id] : nullptr;
  }

  // Reads the event id (common_type) of a record; false if too short.
  static bool ReadEventId(const FtraceRecord& record, uint32_t* id) {
    if (record.size < 2) return false;
    uint16_t v;
    memcpy(&v, record.data, 2);
    *id = v;
    return true;
  }

  // Writes FtraceEventBundle.event for `record` into `writer`. Returns false
  // (and writes nothing) if the record is shorter than its format's fixed
  // fields. Hot path: allocation-free. Encodes into a stack buffer with
  // EncodeEvent() and copies it to `writer`, or streams big events with
  // WriteEventNested().
  bool WriteEvent(const FtraceEventTranslation& t, const FtraceRecord& record,
                  ProtoWriter* writer) const;

  // --- Two-step form, for callers that batch events (FtracePageEncoder). ---
  // Events up to this bound go through EncodeEvent().
  static constexpr size_t kMaxEncodedEventBytes = 1536;
  // Upper bound of EncodeEvent()'s output for `record`; 0 if the record is
  // shorter than its format's fixed fields (invalid).
  static size_t EncodedSizeBound(const FtraceEventTranslation& t, const FtraceRecord& record) {
    if (record.size < t.format->min_size) return 0;
    return kEventPrefixBytes + t.max_fixed_bytes + uint64_t{t.dynamic_strings} * record.size;
  }
  // Encodes FtraceEventBundle.event for `record` at `dst`, which has room
  // for EncodedSizeBound() bytes (<= kMaxEncodedEventBytes, record valid).
  // Returns the end. One forward pass: the two message lengths are 2-byte
  // varints (the second byte may be a redundant 0x00, as protobuf allows)
  // filled in at the end, so nothing is measured twice or moved.
  static uint8_t* EncodeEvent(const FtraceEventTranslation& t, const FtraceRecord& record,
                              uint8_t* dst);
  // Streams the event through ProtoWriter's nested messages (any size).
  void WriteEventNested(const FtraceEventTranslation& t, const FtraceRecord& record,
                        ProtoWriter* writer) const;

  // --- Field readers over an untrusted record (also used by compact_sched).
  // Integer at [offset, offset+size), sign-extended if `is_signed`; 0 if out
  // of the record. size must be 1, 2, 4 or 8.
  static uint64_t ReadInt(const uint8_t* data, uint32_t record_size, uint32_t offset,
                          uint32_t size, bool is_signed) {
    if (offset > record_size || size > record_size - offset) return 0;
    const uint8_t* p = data + offset;
    switch (size) {
      case 1: {
        uint8_t v = *p;
        return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(v))) : v;
      }
      case 2: {
        uint16_t v;
        memcpy(&v, p, 2);
        return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(v))) : v;
      }
      case 4: {
        uint32_t v;
        memcpy(&v, p, 4);
        return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v))) : v;
      }
      case 8: {
        uint64_t v;
        memcpy(&v, p, 8);
        return v;
      }
    }
    return 0;
  }
  // Length of the NUL-terminated string in p[0, n), n if no NUL; reads the
  // bytes a word at a time (comms are 16 bytes).
  static uint32_t BoundedStrLen(const uint8_t* p, uint32_t n) {
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      memcpy(&w, p + i, 8);
      // The lowest set 0x80 marks the first zero byte exactly.
      uint64_t z = (w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull;
      if (z) return i + static_cast<uint32_t>(__builtin_ctzll(z)) / 8;
    }
    for (; i < n; i++)
      if (p[i] == 0) return i;
    return n;
  }
  // memcpy for short copies, inlined (two overlapping moves up to 16 bytes).
  static void CopySmall(uint8_t* dst, const uint8_t* src, size_t n) {
    if (n >= 8) {
      if (n > 16) {
        memcpy(dst, src, n);
        return;
      }
      uint64_t a, b;
      memcpy(&a, src, 8);
      memcpy(&b, src + n - 8, 8);
      memcpy(dst, &a, 8);
      memcpy(dst + n - 8, &b, 8);
    } else if (n >= 4) {
      uint32_t a, b;
      memcpy(&a, src, 4);
      memcpy(&b, src + n - 4, 4);
      memcpy(dst, &a, 4);
      memcpy(dst + n - 4, &b, 4);
    } else {
      for (size_t i = 0; i < n; i++) dst[i] = src[i];
    }
  }
  // The string a string-kind field holds (without the terminating NUL);
  // empty if it lies outside the record.
  static std::string_view ReadString(const FtraceFieldFormat& field, const uint8_t* data,
                                     uint32_t record_size);

 private:
  void BuildKnown(FtraceEventTranslation* t, const void* message_descriptor);
  static void BuildKprobe(FtraceEventTranslation* t, const FtraceFormatTable& table);
  void BuildGeneric(FtraceEventTranslation* t);
  static void ComputeBounds(FtraceEventTranslation* t);
  static void BuildOps(FtraceEventTranslation* t);
  static uint8_t* EncodeGenericField(const FtraceFieldTranslation& f, const uint8_t* data,
                                     uint32_t size, uint8_t* p);
  // Encodes the fields of the event message at `p`; returns the end.
  static uint8_t* EncodeFields(const FtraceEventTranslation& t, const FtraceRecord& record,
                               uint8_t* p);
  // Bytes before the fields: bundle.event tag + length, timestamp, pid,
  // common_flags, event field tag + length.
  static constexpr size_t kEventPrefixBytes = 48;

  const FtraceFormatTable* table_;
  std::vector<std::unique_ptr<FtraceEventTranslation>> translations_;
  std::vector<const FtraceEventTranslation*> by_id_;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_EVENT_TRANSLATOR_H_
