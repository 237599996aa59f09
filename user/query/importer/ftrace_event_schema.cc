#include "user/query/importer/ftrace_event_schema.h"

#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <string>

#include "perfetto/trace/ftrace/ftrace_event.pb.h"
#include "user/query/importer/proto_wire_reader.h"

namespace sluice {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

namespace {

// FtraceEvent's own fields (not event members).
constexpr uint32_t kTimestampField = 1;
constexpr uint32_t kPidField = 2;
constexpr uint32_t kCommonFlagsField = 5;

// How a field's wire value becomes an arg value.
enum class Decode : uint8_t { kSkip, kInt, kSint, kUint, kBool, kString, kDouble, kFloat };

Decode DecodeFor(const FieldDescriptor* f) {
  // Repeated: only sys_enter's args; upstream's raw row keeps the last.
  if (f->is_repeated() && f->type() != FieldDescriptor::TYPE_UINT64) return Decode::kSkip;
  switch (f->type()) {
    case FieldDescriptor::TYPE_INT32:
    case FieldDescriptor::TYPE_INT64:
    case FieldDescriptor::TYPE_ENUM:
    case FieldDescriptor::TYPE_SFIXED32:
    case FieldDescriptor::TYPE_SFIXED64: return Decode::kInt;
    case FieldDescriptor::TYPE_SINT32:
    case FieldDescriptor::TYPE_SINT64: return Decode::kSint;
    case FieldDescriptor::TYPE_UINT32:
    case FieldDescriptor::TYPE_UINT64:
    case FieldDescriptor::TYPE_FIXED32:
    case FieldDescriptor::TYPE_FIXED64: return Decode::kUint;
    case FieldDescriptor::TYPE_BOOL: return Decode::kBool;
    case FieldDescriptor::TYPE_STRING:
    case FieldDescriptor::TYPE_BYTES: return Decode::kString;
    case FieldDescriptor::TYPE_DOUBLE: return Decode::kDouble;
    case FieldDescriptor::TYPE_FLOAT: return Decode::kFloat;
    default: return Decode::kSkip;
  }
}

const google::protobuf::OneofDescriptor* EventOneof() {
  return perfetto::protos::FtraceEvent::descriptor()->FindOneofByName("event");
}

}  // namespace

struct FtraceEventSchema::EventKind {
  StringId name = kNullStringId;
  struct FieldInfo {
    StringId key = kNullStringId;
    Decode decode = Decode::kSkip;
    uint16_t rank = 0;  // Position of `key` among the event's keys, in text order.
    bool repeated = false;  // A later occurrence replaces the earlier.
  };
  std::vector<FieldInfo> fields;  // By field number.
};

bool ParseFtraceEvent(std::string_view bytes, FtraceEventView* out) {
  *out = FtraceEventView{};
  ProtoWireReader reader(bytes);
  WireField f;
  while (reader.Next(&f)) {
    if (f.number == kTimestampField && f.type == WireType::kVarint) {
      out->has_timestamp = true;
      out->timestamp = f.value;
    } else if (f.number == kPidField && f.type == WireType::kVarint) {
      out->pid = static_cast<uint32_t>(f.value);
    } else if (f.number == kCommonFlagsField && f.type == WireType::kVarint) {
      out->common_flags = static_cast<uint32_t>(f.value);
    } else if (f.type == WireType::kBytes && f.number != kTimestampField) {
      // The last length-delimited member wins, as libprotobuf's oneof does.
      out->event_field = f.number;
      out->payload = f.bytes;
    }
  }
  return reader.ok();
}

FtraceEventSchema::FtraceEventSchema(StringPool* strings) : strings_(strings) {}
FtraceEventSchema::~FtraceEventSchema() = default;

FtraceEventSchema::EventKind* FtraceEventSchema::Kind(uint32_t field) {
  if (field < kinds_.size() && kinds_[field]) return kinds_[field].get();
  if (field >= kinds_.size()) {
    if (field > (1u << 20)) return nullptr;  // Beyond any real event number.
    kinds_.resize(field + 1);
  }
  auto kind = std::make_unique<EventKind>();
  const FieldDescriptor* member = perfetto::protos::FtraceEvent::descriptor()->FindFieldByNumber(static_cast<int>(field));
  if (member && member->containing_oneof() == EventOneof() && member->message_type()) {
    kind->name = strings_->Intern(member->name());
    const Descriptor* message = member->message_type();
    for (int i = 0; i < message->field_count(); ++i) {
      const FieldDescriptor* f = message->field(i);
      auto n = static_cast<size_t>(f->number());
      if (n > 4096) continue;
      if (kind->fields.size() <= n) kind->fields.resize(n + 1);
      kind->fields[n] = {strings_->Intern(f->name()), DecodeFor(f), 0, f->is_repeated()};
    }
    std::vector<std::pair<std::string, size_t>> names;
    for (size_t n = 0; n < kind->fields.size(); ++n)
      if (kind->fields[n].key != kNullStringId) names.emplace_back(strings_->Get(kind->fields[n].key), n);
    std::sort(names.begin(), names.end());
    for (size_t r = 0; r < names.size(); ++r) kind->fields[names[r].second].rank = static_cast<uint16_t>(r);
  } else {
    kind->name = strings_->Intern("unknown_event_" + std::to_string(field));
  }
  kinds_[field] = std::move(kind);
  return kinds_[field].get();
}

StringId FtraceEventSchema::EventName(uint32_t field) {
  EventKind* kind = Kind(field);
  return kind ? kind->name : strings_->Intern("unknown_event");
}

bool FtraceEventSchema::DecodeFields(uint32_t field, std::string_view payload, std::vector<EventField>* out) {
  out->clear();
  EventKind* kind = Kind(field);
  ProtoWireReader reader(payload);
  WireField f;
  while (reader.Next(&f)) {
    if (!kind || f.number >= kind->fields.size()) continue;
    const EventKind::FieldInfo& info = kind->fields[f.number];
    EventField ef;
    ef.number = f.number;
    ef.arg.key = info.key;
    bool is_bytes = f.type == WireType::kBytes;
    switch (info.decode) {
      case Decode::kSkip: continue;
      case Decode::kInt:
        if (is_bytes) continue;
        ef.arg.type = ArgType::kInt;
        // A negative int32 is sign-extended to 64 bits on the wire; fixed32
        // needs the extension here.
        ef.arg.int_value = f.type == WireType::kFixed32 ? static_cast<int32_t>(f.value)
                                                       : static_cast<int64_t>(f.value);
        break;
      case Decode::kSint:
        if (is_bytes) continue;
        ef.arg.type = ArgType::kInt;
        ef.arg.int_value = static_cast<int64_t>(f.value >> 1) ^ -static_cast<int64_t>(f.value & 1);
        break;
      case Decode::kUint:
      case Decode::kBool:
        if (is_bytes) continue;
        ef.arg.type = ArgType::kUint;
        ef.arg.int_value = static_cast<int64_t>(f.value);
        break;
      case Decode::kString:
        if (!is_bytes) continue;
        ef.arg.type = ArgType::kString;
        ef.arg.int_value = strings_->Intern(f.bytes);
        break;
      case Decode::kDouble: {
        if (f.type != WireType::kFixed64) continue;
        ef.arg.type = ArgType::kReal;
        std::memcpy(&ef.arg.real_value, &f.value, 8);
        break;
      }
      case Decode::kFloat: {
        if (f.type != WireType::kFixed32) continue;
        ef.arg.type = ArgType::kReal;
        auto bits = static_cast<uint32_t>(f.value);
        float v;
        std::memcpy(&v, &bits, 4);
        ef.arg.real_value = v;
        break;
      }
    }
    if (info.repeated) {
      auto same = std::find_if(out->begin(), out->end(), [&](const EventField& e) { return e.number == ef.number; });
      if (same != out->end()) {
        *same = ef;
        continue;
      }
    }
    out->push_back(ef);
  }
  return reader.ok();
}

bool FtraceEventSchema::SortByKey(uint32_t field, const std::vector<EventField>& fields, std::vector<Arg>* args) {
  EventKind* kind = Kind(field);
  if (!kind || kind->fields.empty()) return false;
  // Insertion sort by rank: a handful of args, usually already in order.
  auto rank = [kind](const EventField& f) { return kind->fields[f.number].rank; };
  order_.resize(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) order_[i] = static_cast<uint32_t>(i);
  for (size_t i = 1; i < order_.size(); ++i)
    for (size_t j = i; j > 0 && rank(fields[order_[j]]) < rank(fields[order_[j - 1]]); --j)
      std::swap(order_[j], order_[j - 1]);
  args->clear();
  for (uint32_t i : order_) args->push_back(fields[i].arg);
  return true;
}

uint32_t FtraceEventSchema::EventFieldNumber(std::string_view name) const {
  const auto* oneof = EventOneof();
  for (int i = 0; oneof && i < oneof->field_count(); ++i)
    if (oneof->field(i)->name() == name) return static_cast<uint32_t>(oneof->field(i)->number());
  return 0;
}

uint32_t FtraceEventSchema::ArgFieldNumber(std::string_view event, std::string_view arg) const {
  const FieldDescriptor* member = perfetto::protos::FtraceEvent::descriptor()->FindFieldByName(std::string(event));
  if (!member || !member->message_type()) return 0;
  const FieldDescriptor* f = member->message_type()->FindFieldByName(std::string(arg));
  return f ? static_cast<uint32_t>(f->number()) : 0;
}

}  // namespace sluice
