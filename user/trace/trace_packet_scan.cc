#include "user/trace/trace_packet_scan.h"

#include <google/protobuf/wire_format.h>
#include <google/protobuf/wire_format_lite.h>

#include <cstring>
#include <unordered_map>

#include "perfetto/trace/ftrace/ftrace_event.pb.h"
#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "perfetto/trace/trace_packet.pb.h"

namespace sluice {
namespace {

using google::protobuf::internal::WireFormat;
using google::protobuf::internal::WireFormatLite;
using perfetto::protos::FtraceEvent;
using perfetto::protos::FtraceEventBundle;
using perfetto::protos::TracePacket;

constexpr auto kVarint = WireFormatLite::WIRETYPE_VARINT;
constexpr auto kBytes = WireFormatLite::WIRETYPE_LENGTH_DELIMITED;

// The field numbers the scan reads, taken from the generated code so that
// they cannot drift from protos/.
constexpr int kFtraceEvents = TracePacket::kFtraceEventsFieldNumber;
constexpr int kSequenceId = TracePacket::kTrustedPacketSequenceIdFieldNumber;
constexpr int kPreviousPacketDropped = TracePacket::kPreviousPacketDroppedFieldNumber;
constexpr int kFirstPacketOnSequence = TracePacket::kFirstPacketOnSequenceFieldNumber;
constexpr int kBundleCpu = FtraceEventBundle::kCpuFieldNumber;
constexpr int kBundleEvent = FtraceEventBundle::kEventFieldNumber;
constexpr int kBundleLostEvents = FtraceEventBundle::kLostEventsFieldNumber;
constexpr int kBundleCompactSched = FtraceEventBundle::kCompactSchedFieldNumber;
constexpr int kSwitchTimestamp = FtraceEventBundle::CompactSched::kSwitchTimestampFieldNumber;
constexpr int kWakingTimestamp = FtraceEventBundle::CompactSched::kWakingTimestampFieldNumber;
// The kinds compact_sched's switches and wakings count as.
constexpr uint32_t kSchedSwitchEvent = FtraceEvent::kSchedSwitchFieldNumber;
constexpr uint32_t kSchedWakingEvent = FtraceEvent::kSchedWakingFieldNumber;

// TracePacket's `data` oneof: a member other than ftrace_events that arrives
// after the bundle replaces it (libprotobuf clears the other members of a
// oneof when one is set), so the scan must forget the bundle then. A member
// with the wrong wire type is an unknown field and replaces nothing.
class DataOneofTable {
 public:
  static const DataOneofTable& Get() {
    static const DataOneofTable table;
    return table;
  }
  bool ReplacesBundle(uint32_t tag) const {
    auto it = wire_type_.find(WireFormatLite::GetTagFieldNumber(tag));
    return it != wire_type_.end() && it->second == WireFormatLite::GetTagWireType(tag);
  }

 private:
  DataOneofTable() {
    const auto* bundle = TracePacket::descriptor()->FindFieldByNumber(kFtraceEvents);
    const auto* oneof = bundle->containing_oneof();
    for (int i = 0; oneof && i < oneof->field_count(); i++) {
      const auto* f = oneof->field(i);
      if (f != bundle) wire_type_[f->number()] = WireFormat::WireTypeForField(f);
    }
  }
  std::unordered_map<int, WireFormatLite::WireType> wire_type_;
};

void ForgetBundle(TracePacketScan* out) {
  out->has_bundle = false;
  out->bundle_cpu = 0;
  out->bundle_lost_events = false;
  out->events = 0;
  out->events_by_field.clear();
}

bool IsStatsField(int field) {
  return field == TracePacket::kFtraceStatsFieldNumber ||
         field == TracePacket::kTraceStatsFieldNumber || field == TracePacket::kBpfStatsFieldNumber ||
         field == TracePacket::kRemoteClockSyncFieldNumber;
}

// Which FtraceEvent field numbers belong to the `event` oneof, from the
// descriptor, built once.
class EventOneofTable {
 public:
  static const EventOneofTable& Get() {
    static const EventOneofTable table;
    return table;
  }
  bool IsEvent(uint32_t field) const { return field < is_event_.size() && is_event_[field]; }

 private:
  EventOneofTable() {
    const auto* oneof = FtraceEvent::descriptor()->FindOneofByName("event");
    for (int i = 0; oneof && i < oneof->field_count(); i++) {
      auto n = static_cast<size_t>(oneof->field(i)->number());
      if (is_event_.size() <= n) is_event_.resize(n + 1);
      is_event_[n] = true;
    }
  }
  std::vector<bool> is_event_;
};

// A reader of the protobuf wire format over one buffer, for the scan's
// loops. Hand-written rather than CodedInputStream: the scan runs over every
// event of a trace each time one is summarised (the end of every sluice
// record, sluice stats), and a stream object per event, with out-of-line
// varint and skip calls, was most of its time (a 50 MB trace: 84 ms).
// It accepts and refuses what libprotobuf's legacy reader does (the fuzzer
// compares the scan with libprotobuf's parse): varints of at most 10 bytes,
// tags and lengths as 32 bits of one, tag 0 refused, groups skipped to their
// matching end up to 100 deep, wire types 6 and 7 refused.
class Wire {
 public:
  explicit Wire(std::string_view bytes)
      : p_(reinterpret_cast<const uint8_t*>(bytes.data())), end_(p_ + bytes.size()) {}
  bool AtEnd() const { return p_ == end_; }

  bool Varint(uint64_t* out) {
    if (p_ != end_ && *p_ < 0x80) {  // Most are one byte.
      *out = *p_++;
      return true;
    }
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p_ == end_) return false;
      const uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        *out = v;
        return true;
      }
    }
    return false;  // Longer than 10 bytes.
  }
  bool Varint32(uint32_t* out) {
    uint64_t v;
    if (!Varint(&v)) return false;
    *out = static_cast<uint32_t>(v);
    return true;
  }
  // False at the end of the input too: test AtEnd() first.
  bool Tag(uint32_t* tag) { return Varint32(tag) && *tag != 0; }
  // The bytes of a length-delimited field whose tag was just read.
  bool Bytes(std::string_view* out) {
    uint32_t len;
    if (!Varint32(&len) || len > static_cast<size_t>(end_ - p_)) return false;
    *out = std::string_view(reinterpret_cast<const char*>(p_), len);
    p_ += len;
    return true;
  }
  bool Skip(uint32_t tag, int depth = 0) {
    switch (WireFormatLite::GetTagWireType(tag)) {
      case WireFormatLite::WIRETYPE_VARINT: {
        uint64_t ignored;
        return Varint(&ignored);
      }
      case WireFormatLite::WIRETYPE_FIXED64:
        return Advance(8);
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
        std::string_view ignored;
        return Bytes(&ignored);
      }
      case WireFormatLite::WIRETYPE_FIXED32:
        return Advance(4);
      case WireFormatLite::WIRETYPE_START_GROUP: {
        if (depth >= kMaxGroupDepth) return false;
        const uint32_t end_tag =
            WireFormatLite::MakeTag(WireFormatLite::GetTagFieldNumber(tag), WireFormatLite::WIRETYPE_END_GROUP);
        for (;;) {
          uint32_t inner;
          if (AtEnd() || !Tag(&inner)) return false;
          if (WireFormatLite::GetTagWireType(inner) == WireFormatLite::WIRETYPE_END_GROUP) return inner == end_tag;
          if (!Skip(inner, depth + 1)) return false;
        }
      }
      default:  // An end of group with no start; wire types 6 and 7.
        return false;
    }
  }

 private:
  static constexpr int kMaxGroupDepth = 100;
  bool Advance(size_t n) {
    if (n > static_cast<size_t>(end_ - p_)) return false;
    p_ += n;
    return true;
  }
  const uint8_t* p_;
  const uint8_t* const end_;
};

// Elements of a packed varint array: bytes with the top bit clear. Fails on a
// last varint left open or one longer than 10 bytes, as libprotobuf does.
// Hand-written, eight bytes at a time: compact_sched's arrays are most of a
// sched trace's bytes, and this runs over every one of them each time a
// trace is summarised (sluice record's end, sluice stats).
bool CountPackedVarints(std::string_view bytes, uint64_t* count) {
  constexpr uint64_t kTopBits = 0x8080808080808080ull;
  uint64_t n = 0;
  int run = 0;  // Continuation bytes since the last end of a varint.
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word;
    memcpy(&word, bytes.data() + i, sizeof(word));
    const uint64_t ends = ~word & kTopBits;  // The top bit of each last byte.
    if (ends == 0) {
      run += 8;
      if (run >= 10) return false;
      continue;
    }
    // Runs inside the word, between two ends, are at most 6 bytes; only the
    // one before its first end (continuing `run`) and the one after its last
    // can reach 10. Bytes are in memory order: little-endian, low first.
    if (run + __builtin_ctzll(ends) / 8 >= 10) return false;
    run = __builtin_clzll(ends) / 8;
    n += ((ends >> 7) * 0x0101010101010101ull) >> 56;  // One bit a byte, summed.
  }
  for (; i < bytes.size(); i++) {
    if (static_cast<uint8_t>(bytes[i]) & 0x80) {
      if (++run >= 10) return false;
    } else {
      run = 0;
      n++;
    }
  }
  if (run) return false;
  *count += n;
  return true;
}

void AddEvents(TracePacketScan* out, uint32_t field, uint64_t n) {
  if (!n) return;
  out->events += n;
  for (auto& [f, count] : out->events_by_field) {
    if (f == field) {
      count += n;
      return;
    }
  }
  out->events_by_field.push_back({field, n});
}

// The event's kind: the last `event` oneof member on the wire (libprotobuf
// keeps the last one set), 0 when none.
bool ScanEvent(std::string_view bytes, uint32_t* kind) {
  const auto& table = EventOneofTable::Get();
  Wire in(bytes);
  *kind = 0;
  while (!in.AtEnd()) {
    uint32_t tag;
    if (!in.Tag(&tag)) return false;
    uint32_t field = WireFormatLite::GetTagFieldNumber(tag);
    if (table.IsEvent(field) && WireFormatLite::GetTagWireType(tag) == kBytes) *kind = field;
    if (!in.Skip(tag)) return false;
  }
  return true;
}

// One timestamp array of compact_sched: packed (how sluice and Perfetto write
// it) or one varint per tag (also valid protobuf).
bool CountTimestamps(Wire* in, uint32_t tag, uint64_t* count) {
  if (WireFormatLite::GetTagWireType(tag) == kBytes) {
    std::string_view packed;
    return in->Bytes(&packed) && CountPackedVarints(packed, count);
  }
  if (WireFormatLite::GetTagWireType(tag) == kVarint) {
    uint64_t ignored;
    if (!in->Varint(&ignored)) return false;
    (*count)++;
    return true;
  }
  return in->Skip(tag);
}

bool ScanCompactSched(std::string_view bytes, TracePacketScan* out) {
  Wire in(bytes);
  uint64_t switches = 0, wakings = 0;
  while (!in.AtEnd()) {
    uint32_t tag;
    if (!in.Tag(&tag)) return false;
    int field = WireFormatLite::GetTagFieldNumber(tag);
    bool ok = field == kSwitchTimestamp   ? CountTimestamps(&in, tag, &switches)
              : field == kWakingTimestamp ? CountTimestamps(&in, tag, &wakings)
                                          : in.Skip(tag);
    if (!ok) return false;
  }
  AddEvents(out, kSchedSwitchEvent, switches);
  AddEvents(out, kSchedWakingEvent, wakings);
  return true;
}

bool ScanBundle(std::string_view bytes, TracePacketScan* out) {
  Wire in(bytes);
  out->has_bundle = true;
  // Events of one kind come in runs: count a run, then add it.
  uint32_t run_kind = 0;
  uint64_t run = 0;
  while (!in.AtEnd()) {
    uint32_t tag;
    if (!in.Tag(&tag)) return false;
    int field = WireFormatLite::GetTagFieldNumber(tag);
    auto type = WireFormatLite::GetTagWireType(tag);
    if (field == kBundleEvent && type == kBytes) {
      std::string_view event;
      uint32_t kind = 0;
      if (!in.Bytes(&event) || !ScanEvent(event, &kind)) return false;
      if (kind != run_kind) {
        AddEvents(out, run_kind, run);
        run_kind = kind;
        run = 0;
      }
      run++;
    } else if (field == kBundleCompactSched && type == kBytes) {
      std::string_view compact;
      if (!in.Bytes(&compact) || !ScanCompactSched(compact, out)) return false;
    } else if (field == kBundleCpu && type == kVarint) {
      if (!in.Varint32(&out->bundle_cpu)) return false;
    } else if (field == kBundleLostEvents && type == kVarint) {
      uint64_t v = 0;
      if (!in.Varint(&v)) return false;
      out->bundle_lost_events = v != 0;
    } else if (!in.Skip(tag)) {
      return false;
    }
  }
  AddEvents(out, run_kind, run);
  return true;
}

}  // namespace

bool ScanTracePacket(std::string_view packet, TracePacketScan* out) {
  // Start from empty but keep the vector's capacity (the caller reuses *out).
  auto kinds = std::move(out->events_by_field);
  kinds.clear();
  *out = TracePacketScan{};
  out->events_by_field = std::move(kinds);
  if (packet.size() > static_cast<size_t>(INT32_MAX)) return false;
  Wire in(packet);
  while (!in.AtEnd()) {
    uint32_t tag;
    if (!in.Tag(&tag)) return false;
    int field = WireFormatLite::GetTagFieldNumber(tag);
    auto type = WireFormatLite::GetTagWireType(tag);
    bool ok = true;
    if (field == kFtraceEvents && type == kBytes) {
      std::string_view bundle;
      ok = in.Bytes(&bundle) && ScanBundle(bundle, out);
    } else if (field == kSequenceId && type == kVarint) {
      ok = in.Varint32(&out->sequence_id);
      out->has_sequence_id = true;
    } else if (field == kPreviousPacketDropped && type == kVarint) {
      // uint32 on the wire; libprotobuf keeps the low 32 bits of a longer varint.
      uint64_t v = 0;
      ok = in.Varint(&v);
      out->previous_packet_dropped = static_cast<uint32_t>(v);
    } else if (field == TracePacket::kMachineIdFieldNumber && type == kVarint) {
      ok = in.Varint32(&out->machine_id);
    } else if (field == kFirstPacketOnSequence && type == kVarint) {
      uint64_t v = 0;
      ok = in.Varint(&v);
      out->first_packet_on_sequence = v != 0;
    } else {
      if (IsStatsField(field)) out->has_stats = true;
      if (field == TracePacket::kTraceConfigFieldNumber) out->has_trace_config = true;
      if (out->has_bundle && DataOneofTable::Get().ReplacesBundle(tag)) ForgetBundle(out);
      ok = in.Skip(tag);
    }
    if (!ok) return false;
  }
  return true;
}

std::string FtraceEventFieldName(uint32_t field) {
  const auto* f = FtraceEvent::descriptor()->FindFieldByNumber(static_cast<int>(field));
  return f && field ? f->name() : "unknown";
}

}  // namespace sluice
