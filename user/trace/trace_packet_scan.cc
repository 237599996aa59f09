#include "user/trace/trace_packet_scan.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format.h>
#include <google/protobuf/wire_format_lite.h>

#include <unordered_map>

#include "perfetto/trace/ftrace/ftrace_event.pb.h"
#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "perfetto/trace/trace_packet.pb.h"

namespace sluice {
namespace {

using google::protobuf::io::CodedInputStream;
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
         field == TracePacket::kTraceStatsFieldNumber || field == TracePacket::kBpfStatsFieldNumber;
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

// The bytes of a length-delimited field whose tag was just read, as a view
// into `whole` (the buffer `in` reads); false if they run past its end.
bool ReadBytesView(CodedInputStream* in, std::string_view whole, std::string_view* out) {
  uint32_t len = 0;
  if (!in->ReadVarint32(&len)) return false;
  auto pos = static_cast<size_t>(in->CurrentPosition());
  if (len > whole.size() - pos) return false;
  *out = whole.substr(pos, len);
  return in->Skip(static_cast<int>(len));
}

CodedInputStream StreamOver(std::string_view bytes) {
  return CodedInputStream(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size()));
}

// ReadTag() returns 0 both at the end of input and for a malformed tag, so
// every loop below tests AtEnd() first: a 0 tag is then always an error.
bool AtEnd(const CodedInputStream& in, std::string_view bytes) {
  return static_cast<size_t>(in.CurrentPosition()) == bytes.size();
}

// Elements of a packed varint array: bytes with the top bit clear. Fails on a
// last varint left open or one longer than 10 bytes, as libprotobuf does.
bool CountPackedVarints(std::string_view bytes, uint64_t* count) {
  uint64_t n = 0;
  int run = 0;
  for (char c : bytes) {
    if (static_cast<uint8_t>(c) & 0x80) {
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
  CodedInputStream in = StreamOver(bytes);
  *kind = 0;
  while (!AtEnd(in, bytes)) {
    uint32_t tag = in.ReadTag();
    if (!tag) return false;
    uint32_t field = WireFormatLite::GetTagFieldNumber(tag);
    if (table.IsEvent(field) && WireFormatLite::GetTagWireType(tag) == kBytes) *kind = field;
    if (!WireFormatLite::SkipField(&in, tag)) return false;
  }
  return true;
}

// One timestamp array of compact_sched: packed (how sluice and Perfetto write
// it) or one varint per tag (also valid protobuf).
bool CountTimestamps(CodedInputStream* in, std::string_view whole, uint32_t tag, uint64_t* count) {
  if (WireFormatLite::GetTagWireType(tag) == kBytes) {
    std::string_view packed;
    return ReadBytesView(in, whole, &packed) && CountPackedVarints(packed, count);
  }
  if (WireFormatLite::GetTagWireType(tag) == kVarint) {
    uint64_t ignored;
    if (!in->ReadVarint64(&ignored)) return false;
    (*count)++;
    return true;
  }
  return WireFormatLite::SkipField(in, tag);
}

bool ScanCompactSched(std::string_view bytes, TracePacketScan* out) {
  CodedInputStream in = StreamOver(bytes);
  uint64_t switches = 0, wakings = 0;
  while (!AtEnd(in, bytes)) {
    uint32_t tag = in.ReadTag();
    if (!tag) return false;
    int field = WireFormatLite::GetTagFieldNumber(tag);
    bool ok = field == kSwitchTimestamp   ? CountTimestamps(&in, bytes, tag, &switches)
              : field == kWakingTimestamp ? CountTimestamps(&in, bytes, tag, &wakings)
                                          : WireFormatLite::SkipField(&in, tag);
    if (!ok) return false;
  }
  AddEvents(out, kSchedSwitchEvent, switches);
  AddEvents(out, kSchedWakingEvent, wakings);
  return true;
}

bool ScanBundle(std::string_view bytes, TracePacketScan* out) {
  CodedInputStream in = StreamOver(bytes);
  out->has_bundle = true;
  while (!AtEnd(in, bytes)) {
    uint32_t tag = in.ReadTag();
    if (!tag) return false;
    int field = WireFormatLite::GetTagFieldNumber(tag);
    auto type = WireFormatLite::GetTagWireType(tag);
    if (field == kBundleEvent && type == kBytes) {
      std::string_view event;
      uint32_t kind = 0;
      if (!ReadBytesView(&in, bytes, &event) || !ScanEvent(event, &kind)) return false;
      AddEvents(out, kind, 1);
    } else if (field == kBundleCompactSched && type == kBytes) {
      std::string_view compact;
      if (!ReadBytesView(&in, bytes, &compact) || !ScanCompactSched(compact, out)) return false;
    } else if (field == kBundleCpu && type == kVarint) {
      if (!in.ReadVarint32(&out->bundle_cpu)) return false;
    } else if (field == kBundleLostEvents && type == kVarint) {
      uint64_t v = 0;
      if (!in.ReadVarint64(&v)) return false;
      out->bundle_lost_events = v != 0;
    } else if (!WireFormatLite::SkipField(&in, tag)) {
      return false;
    }
  }
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
  CodedInputStream in = StreamOver(packet);
  while (!AtEnd(in, packet)) {
    uint32_t tag = in.ReadTag();
    if (!tag) return false;
    int field = WireFormatLite::GetTagFieldNumber(tag);
    auto type = WireFormatLite::GetTagWireType(tag);
    bool ok = true;
    if (field == kFtraceEvents && type == kBytes) {
      std::string_view bundle;
      ok = ReadBytesView(&in, packet, &bundle) && ScanBundle(bundle, out);
    } else if (field == kSequenceId && type == kVarint) {
      ok = in.ReadVarint32(&out->sequence_id);
      out->has_sequence_id = true;
    } else if (field == kPreviousPacketDropped && type == kVarint) {
      // uint32 on the wire; libprotobuf keeps the low 32 bits of a longer varint.
      uint64_t v = 0;
      ok = in.ReadVarint64(&v);
      out->previous_packet_dropped = static_cast<uint32_t>(v);
    } else if (field == kFirstPacketOnSequence && type == kVarint) {
      uint64_t v = 0;
      ok = in.ReadVarint64(&v);
      out->first_packet_on_sequence = v != 0;
    } else {
      if (IsStatsField(field)) out->has_stats = true;
      if (field == TracePacket::kTraceConfigFieldNumber) out->has_trace_config = true;
      if (out->has_bundle && DataOneofTable::Get().ReplacesBundle(tag)) ForgetBundle(out);
      ok = WireFormatLite::SkipField(&in, tag);
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
