#include "user/probes/ftrace/ftrace_event_translator.h"

#include <algorithm>
#include <cstring>

#include <google/protobuf/descriptor.h>

#include "perfetto/trace/ftrace/ftrace_event.pb.h"
#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "perfetto/trace/ftrace/generic.pb.h"
#include "user/probes/ftrace/ftrace_settings.h"

namespace sluice {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using perfetto::protos::FtraceEvent;
using perfetto::protos::FtraceEventBundle;
using perfetto::protos::GenericFtraceEvent;
using perfetto::protos::GenericFtraceEvent_Field;
using perfetto::protos::KprobeEvent;

std::string EncodeStringField(uint32_t field_id, std::string_view s) {
  uint8_t buf[20];
  uint8_t* p = ProtoWriter::EncodeVarInt(
      ProtoWriter::MakeTag(field_id, ProtoWriter::kWireLengthDelimited), buf);
  p = ProtoWriter::EncodeVarInt(s.size(), p);
  std::string out(reinterpret_cast<const char*>(buf), static_cast<size_t>(p - buf));
  out.append(s);
  return out;
}

bool IsIntegerType(FieldDescriptor::Type t) {
  switch (t) {
    case FieldDescriptor::TYPE_INT32:
    case FieldDescriptor::TYPE_INT64:
    case FieldDescriptor::TYPE_UINT32:
    case FieldDescriptor::TYPE_UINT64:
    case FieldDescriptor::TYPE_BOOL:
    case FieldDescriptor::TYPE_ENUM:
    case FieldDescriptor::TYPE_SINT32:
    case FieldDescriptor::TYPE_SINT64:
      return true;
    default:
      return false;
  }
}

bool IsIntSize(uint32_t size) { return size == 1 || size == 2 || size == 4 || size == 8; }

// An empty string that still points somewhere (memcpy(dst, nullptr, 0) is
// undefined behaviour).
std::string_view Empty(const uint8_t* data) {
  return std::string_view(reinterpret_cast<const char*>(data), 0);
}

}  // namespace

// static
std::string_view FtraceEventTranslator::ReadString(const FtraceFieldFormat& field,
                                                   const uint8_t* data,
                                                   uint32_t record_size) {
  uint32_t start = 0, len = 0;
  switch (field.kind) {
    case FtraceFieldKind::kFixedString:
      if (field.offset >= record_size) return Empty(data);
      start = field.offset;
      len = std::min(field.size, record_size - field.offset);
      break;
    case FtraceFieldKind::kTrailingString:
      if (field.offset >= record_size) return Empty(data);
      start = field.offset;
      len = record_size - field.offset;
      break;
    case FtraceFieldKind::kDataLocString:
    case FtraceFieldKind::kRelLocString: {
      if (field.offset > record_size || record_size - field.offset < 4) return Empty(data);
      uint32_t loc;
      memcpy(&loc, data + field.offset, 4);
      start = loc & 0xffff;
      len = loc >> 16;
      // __rel_loc counts from the end of the 4-byte field.
      if (field.kind == FtraceFieldKind::kRelLocString) start += field.offset + 4;
      if (start > record_size || len > record_size - start) return Empty(data);
      break;
    }
    default:
      return Empty(data);
  }
  return std::string_view(reinterpret_cast<const char*>(data + start),
                          BoundedStrLen(data + start, len));
}

namespace {

// The FtraceEvent member for a kernel event. Names alone are not unique:
// several Android drivers each have a tracing_mark_write. Upstream's protos
// give the plain name to one group's event and the others their group as a
// prefix (sde_tracing_mark_write), so the prefixed name is tried first, and a
// plain name owned by another group stays generic rather than being written
// as a message whose fields it does not have.
const FieldDescriptor* EventFieldOf(std::string_view group, std::string_view name) {
  static constexpr std::pair<std::string_view, std::string_view> kPlainNameOwners[] = {
      {"tracing_mark_write", "mdss"},
  };
  const Descriptor* ftrace_event = FtraceEvent::descriptor();
  if (const FieldDescriptor* f = ftrace_event->FindFieldByName(std::string(group) + "_" + std::string(name))) return f;
  for (const auto& [plain, owner] : kPlainNameOwners)
    if (name == plain && group != owner) return nullptr;
  return ftrace_event->FindFieldByName(std::string(name));
}

bool IsOwnMessage(const FieldDescriptor* field) {
  return field && field->type() == FieldDescriptor::TYPE_MESSAGE &&
         field->message_type() != GenericFtraceEvent::descriptor() && field->containing_oneof() != nullptr;
}

}  // namespace

bool FtraceEventHasOwnMessage(std::string_view group, std::string_view name) {
  return group == kKprobeGroup || group == kKretprobeGroup || IsOwnMessage(EventFieldOf(group, name));
}

FtraceEventTranslator::FtraceEventTranslator(const FtraceFormatTable* table) : table_(table) {
  for (const FtraceEventFormat* format : table->events()) {
    auto t = std::make_unique<FtraceEventTranslation>();
    t->format = format;
    if (const FtraceFieldFormat* pid = format->FindField("common_pid");
        pid && pid->kind == FtraceFieldKind::kInt) {
      t->pid_offset = pid->offset;
      t->pid_size = pid->size;
    }
    const FieldDescriptor* event_field = EventFieldOf(format->group, format->name);
    if (format->group == kKprobeGroup || format->group == kKretprobeGroup) {
      BuildKprobe(t.get(), *table);
    } else if (IsOwnMessage(event_field)) {
      t->proto_field = static_cast<uint32_t>(event_field->number());
      t->proto_name = "FtraceEvent." + std::string(event_field->name());
      BuildKnown(t.get(), event_field->message_type());
    } else {
      t->generic = true;
      t->proto_field = FtraceEvent::kGenericFieldNumber;
      t->proto_name = "FtraceEvent.generic";
      BuildGeneric(t.get());
    }
    ComputeBounds(t.get());
    BuildOps(t.get());
    if (format->id >= by_id_.size()) by_id_.resize(format->id + 1, nullptr);
    by_id_[format->id] = t.get();
    translations_.push_back(std::move(t));
  }
}

// A probe's hit is a KprobeEvent: the function's name and whether it
// begins (a kprobe whose kretprobe is recorded too), ends (that kretprobe) or
// is a point (a probe alone), as upstream's recorder writes it. Its kernel
// fields (__probe_ip) are not written.
void FtraceEventTranslator::BuildKprobe(FtraceEventTranslation* t, const FtraceFormatTable& table) {
  const FtraceEventFormat& f = *t->format;
  const bool ret = f.group == kKretprobeGroup;
  const bool paired = table.FindByName(ret ? kKprobeGroup : kKretprobeGroup, f.name) != nullptr;
  const auto type = !paired ? KprobeEvent::KPROBE_TYPE_INSTANT
                    : ret   ? KprobeEvent::KPROBE_TYPE_END
                            : KprobeEvent::KPROBE_TYPE_BEGIN;
  t->proto_field = FtraceEvent::kKprobeEventFieldNumber;
  t->proto_name = "FtraceEvent.kprobe_event";
  t->prefix_bytes = EncodeStringField(KprobeEvent::kNameFieldNumber, f.name);
  uint8_t varint[20];
  uint8_t* end = ProtoWriter::EncodeVarInt(ProtoWriter::MakeTag(KprobeEvent::kTypeFieldNumber, ProtoWriter::kWireVarInt),
                                           varint);
  end = ProtoWriter::EncodeVarInt(static_cast<uint64_t>(type), end);
  t->prefix_bytes.append(reinterpret_cast<const char*>(varint), static_cast<size_t>(end - varint));
  for (const FtraceFieldFormat& field : f.fields)
    if (field.name.rfind("common_", 0) != 0) t->skipped.emplace_back(&field, "a probe's hit is written as KprobeEvent");
}

void FtraceEventTranslator::BuildKnown(FtraceEventTranslation* t, const void* message_descriptor) {
  const auto* message = static_cast<const Descriptor*>(message_descriptor);
  for (const FtraceFieldFormat& field : t->format->fields) {
    if (field.name.rfind("common_", 0) == 0) continue;
    const FieldDescriptor* pf = message->FindFieldByName(field.name);
    if (pf == nullptr) {
      t->skipped.emplace_back(&field, "no field of that name in " + std::string(message->name()));
      continue;
    }
    FtraceFieldTranslation ft;
    ft.format = &field;
    ft.proto_field = static_cast<uint32_t>(pf->number());
    ft.proto_name = std::string(message->name()) + "." + std::string(pf->name());
    const bool proto_string =
        pf->type() == FieldDescriptor::TYPE_STRING || pf->type() == FieldDescriptor::TYPE_BYTES;
    const bool proto_int = IsIntegerType(pf->type());
    if (proto_string && !pf->is_repeated() && field.IsString()) {
      ft.wire = FtraceFieldTranslation::Wire::kString;
    } else if (proto_int && !pf->is_repeated() && field.kind == FtraceFieldKind::kInt) {
      ft.wire = (pf->type() == FieldDescriptor::TYPE_SINT32 ||
                 pf->type() == FieldDescriptor::TYPE_SINT64)
                    ? FtraceFieldTranslation::Wire::kZigZag
                    : FtraceFieldTranslation::Wire::kVarInt;
    } else if (proto_int && pf->is_repeated() && field.kind == FtraceFieldKind::kFixedArray &&
               IsIntSize(field.element_size)) {
      ft.wire = FtraceFieldTranslation::Wire::kRepeatedVarInt;
    } else {
      t->skipped.emplace_back(&field, "kind " + std::string(FtraceFieldKindName(field.kind)) +
                                          " does not fit " + ft.proto_name);
      continue;
    }
    t->fields.push_back(std::move(ft));
  }
}

void FtraceEventTranslator::BuildGeneric(FtraceEventTranslation* t) {
  t->prefix_bytes = EncodeStringField(GenericFtraceEvent::kEventNameFieldNumber,
                                            t->format->name);
  for (const FtraceFieldFormat& field : t->format->fields) {
    if (field.name.rfind("common_", 0) == 0) continue;
    FtraceFieldTranslation ft;
    ft.format = &field;
    if (field.IsString()) {
      ft.wire = FtraceFieldTranslation::Wire::kGenericString;
      ft.proto_field = GenericFtraceEvent_Field::kStrValueFieldNumber;
      ft.proto_name = "GenericFtraceEvent.Field.str_value";
    } else if (field.kind == FtraceFieldKind::kInt) {
      ft.wire = field.is_signed ? FtraceFieldTranslation::Wire::kGenericInt
                                : FtraceFieldTranslation::Wire::kGenericUint;
      ft.proto_field = field.is_signed ? GenericFtraceEvent_Field::kIntValueFieldNumber
                                       : GenericFtraceEvent_Field::kUintValueFieldNumber;
      ft.proto_name = field.is_signed ? "GenericFtraceEvent.Field.int_value"
                                      : "GenericFtraceEvent.Field.uint_value";
    } else {
      t->skipped.emplace_back(&field, "arrays are not written in generic events");
      continue;
    }
    ft.generic_name_bytes = EncodeStringField(GenericFtraceEvent_Field::kNameFieldNumber,
                                              field.name);
    t->fields.push_back(std::move(ft));
  }
}

namespace {

// Worst-case bytes of a tag, a varint, a length prefix.
constexpr uint32_t kMaxTag = 5;
constexpr uint32_t kMaxVarInt = 10;

inline uint8_t* PutTag(uint8_t* p, uint32_t field, uint32_t wire) {
  return ProtoWriter::EncodeVarInt(ProtoWriter::MakeTag(field, wire), p);
}
inline uint8_t* PutVarIntField(uint8_t* p, uint32_t field, uint64_t v) {
  return ProtoWriter::EncodeVarInt(v, PutTag(p, field, ProtoWriter::kWireVarInt));
}
inline uint8_t* PutBytesField(uint8_t* p, uint32_t field, std::string_view s) {
  p = PutTag(p, field, ProtoWriter::kWireLengthDelimited);
  p = ProtoWriter::EncodeVarInt(s.size(), p);
  FtraceEventTranslator::CopySmall(p, reinterpret_cast<const uint8_t*>(s.data()), s.size());
  return p + s.size();
}
// `v` < 2^14 as exactly two varint bytes.
inline void Put2ByteVarInt(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v | 0x80);
  p[1] = static_cast<uint8_t>(v >> 7);
}
inline uint64_t ZigZag(uint64_t v) {
  return (v << 1) ^ static_cast<uint64_t>(static_cast<int64_t>(v) >> 63);
}
bool IsDynamicString(const FtraceFieldFormat& f) {
  return f.IsString() && f.kind != FtraceFieldKind::kFixedString;
}

}  // namespace

// static
void FtraceEventTranslator::ComputeBounds(FtraceEventTranslation* t) {
  uint32_t fixed = static_cast<uint32_t>(t->prefix_bytes.size());
  for (const FtraceFieldTranslation& f : t->fields) {
    const FtraceFieldFormat& ff = *f.format;
    uint32_t value = kMaxTag + kMaxVarInt;
    if (f.wire == FtraceFieldTranslation::Wire::kRepeatedVarInt) {
      value = (kMaxTag + kMaxVarInt) * (ff.element_size ? ff.size / ff.element_size : 0);
    } else if (ff.IsString()) {
      if (IsDynamicString(ff))
        t->dynamic_strings++;
      else
        value += ff.size;
    }
    if (!f.generic_name_bytes.empty())  // Field { name, value } wrapper.
      value += kMaxTag + kMaxVarInt + static_cast<uint32_t>(f.generic_name_bytes.size());
    fixed += value;
  }
  t->max_fixed_bytes = fixed;
}

// static
void FtraceEventTranslator::BuildOps(FtraceEventTranslation* t) {
  {
    uint8_t tag[10];
    uint8_t* end = PutTag(tag, t->proto_field, ProtoWriter::kWireLengthDelimited);
    t->event_tag_size = static_cast<uint8_t>(end - tag);
    memcpy(t->event_tag, tag, std::min<size_t>(t->event_tag_size, sizeof(t->event_tag)));
  }
  for (const FtraceFieldTranslation& f : t->fields) {
    const FtraceFieldFormat& ff = *f.format;
    FtraceFieldOp op;
    op.offset = ff.offset;
    op.size = ff.size;
    op.is_signed = ff.is_signed;
    op.element_size = static_cast<uint8_t>(ff.element_size);
    op.field = &f;
    using W = FtraceFieldTranslation::Wire;
    uint32_t wire = ProtoWriter::kWireVarInt;
    switch (f.wire) {
      case W::kVarInt:
        switch (ff.size) {
          case 1: op.op = ff.is_signed ? FtraceFieldOp::kS8 : FtraceFieldOp::kU8; break;
          case 2: op.op = ff.is_signed ? FtraceFieldOp::kS16 : FtraceFieldOp::kU16; break;
          case 4: op.op = ff.is_signed ? FtraceFieldOp::kS32 : FtraceFieldOp::kU32; break;
          default: op.op = FtraceFieldOp::kU64; break;
        }
        break;
      case W::kZigZag: op.op = FtraceFieldOp::kZigZag; break;
      case W::kString:
        op.op = ff.kind == FtraceFieldKind::kFixedString ? FtraceFieldOp::kFixedString
                                                          : FtraceFieldOp::kString;
        wire = ProtoWriter::kWireLengthDelimited;
        break;
      case W::kRepeatedVarInt: op.op = FtraceFieldOp::kRepeated; break;
      case W::kGenericString:
      case W::kGenericInt:
      case W::kGenericUint: op.op = FtraceFieldOp::kGeneric; break;
    }
    uint8_t tag[10];
    uint8_t* end = ProtoWriter::EncodeVarInt(ProtoWriter::MakeTag(f.proto_field, wire), tag);
    op.tag_size = static_cast<uint8_t>(end - tag);
    if (op.tag_size > sizeof(op.tag)) continue;  // Field numbers < 2^25 only.
    memcpy(op.tag, tag, op.tag_size);
    t->ops.push_back(op);
  }
}

// static
uint8_t* FtraceEventTranslator::EncodeFields(const FtraceEventTranslation& t,
                                             const FtraceRecord& record, uint8_t* p) {
  const uint8_t* data = record.data;
  const uint32_t size = record.size;
  if (!t.prefix_bytes.empty()) {
    memcpy(p, t.prefix_bytes.data(), t.prefix_bytes.size());
    p += t.prefix_bytes.size();
  }
  // record.size >= min_size was checked: fixed fields are inside the record.
  for (const FtraceFieldOp& op : t.ops) {
    const uint8_t* src = data + op.offset;
    uint64_t v = 0;
    switch (op.op) {
      case FtraceFieldOp::kU8:
        v = *src;
        break;
      case FtraceFieldOp::kU16: {
        uint16_t x;
        memcpy(&x, src, 2);
        v = x;
        break;
      }
      case FtraceFieldOp::kU32: {
        uint32_t x;
        memcpy(&x, src, 4);
        v = x;
        break;
      }
      case FtraceFieldOp::kU64:
        memcpy(&v, src, 8);
        break;
      case FtraceFieldOp::kS8:
        v = static_cast<uint64_t>(int64_t{static_cast<int8_t>(*src)});
        break;
      case FtraceFieldOp::kS16: {
        int16_t x;
        memcpy(&x, src, 2);
        v = static_cast<uint64_t>(int64_t{x});
        break;
      }
      case FtraceFieldOp::kS32: {
        int32_t x;
        memcpy(&x, src, 4);
        v = static_cast<uint64_t>(int64_t{x});
        break;
      }
      case FtraceFieldOp::kZigZag:
        v = ZigZag(ReadInt(data, size, op.offset, op.size, op.is_signed));
        break;
      case FtraceFieldOp::kFixedString: {
        const uint32_t len = BoundedStrLen(src, op.size);
        memcpy(p, op.tag, sizeof(op.tag));
        p += op.tag_size;
        p = ProtoWriter::EncodeVarInt(len, p);
        CopySmall(p, src, len);
        p += len;
        continue;
      }
      case FtraceFieldOp::kString:
        p = PutBytesField(p, op.field->proto_field, ReadString(*op.field->format, data, size));
        continue;
      case FtraceFieldOp::kRepeated: {
        const uint32_t n = op.element_size ? op.size / op.element_size : 0;
        for (uint32_t i = 0; i < n; i++)
          p = PutVarIntField(p, op.field->proto_field,
                             ReadInt(data, size, op.offset + i * op.element_size,
                                     op.element_size, op.is_signed));
        continue;
      }
      case FtraceFieldOp::kGeneric:
        p = EncodeGenericField(*op.field, data, size, p);
        continue;
    }
    memcpy(p, op.tag, sizeof(op.tag));  // Room checked: kMaxTag per field.
    p += op.tag_size;
    p = ProtoWriter::EncodeVarInt(v, p);
  }
  return p;
}

// static
uint8_t* FtraceEventTranslator::EncodeGenericField(const FtraceFieldTranslation& f,
                                                   const uint8_t* data, uint32_t size,
                                                   uint8_t* p) {
  const FtraceFieldFormat& ff = *f.format;
  // Field { name = 1; value }: encode the value's tag (and length), then the
  // wrapper's tag and length, the pre-encoded name, the value.
  uint8_t value[kMaxTag + kMaxVarInt];
  uint8_t* v = value;
  std::string_view str;
  if (f.wire == FtraceFieldTranslation::Wire::kGenericString) {
    str = ReadString(ff, data, size);
    v = PutTag(v, f.proto_field, ProtoWriter::kWireLengthDelimited);
    v = ProtoWriter::EncodeVarInt(str.size(), v);
  } else {
    v = PutVarIntField(v, f.proto_field, ReadInt(data, size, ff.offset, ff.size, ff.is_signed));
  }
  const size_t head = static_cast<size_t>(v - value);
  const size_t body = f.generic_name_bytes.size() + head + str.size();
  p = PutTag(p, GenericFtraceEvent::kFieldFieldNumber, ProtoWriter::kWireLengthDelimited);
  p = ProtoWriter::EncodeVarInt(body, p);
  memcpy(p, f.generic_name_bytes.data(), f.generic_name_bytes.size());
  p += f.generic_name_bytes.size();
  memcpy(p, value, head);
  p += head;
  if (!str.empty()) memcpy(p, str.data(), str.size());
  return p + str.size();
}

bool FtraceEventTranslator::WriteEvent(const FtraceEventTranslation& t,
                                       const FtraceRecord& record, ProtoWriter* w) const {
  const size_t bound = EncodedSizeBound(t, record);
  if (bound == 0) return false;
  if (bound > kMaxEncodedEventBytes) {
    WriteEventNested(t, record, w);
    return true;
  }
  uint8_t scratch[kMaxEncodedEventBytes];
  uint8_t* end = EncodeEvent(t, record, scratch);
  w->WriteRaw(scratch, static_cast<size_t>(end - scratch));
  return true;
}

// static
uint8_t* FtraceEventTranslator::EncodeEvent(const FtraceEventTranslation& t,
                                            const FtraceRecord& record, uint8_t* dst) {
  static_assert(kMaxEncodedEventBytes < (1u << 14), "lengths must fit 2-byte varints");
  const uint8_t* data = record.data;
  const uint32_t size = record.size;
  uint8_t* p = PutTag(dst, FtraceEventBundle::kEventFieldNumber, ProtoWriter::kWireLengthDelimited);
  uint8_t* const event_len = p;
  p += 2;
  p = PutVarIntField(p, FtraceEvent::kTimestampFieldNumber, record.timestamp);
  if (t.pid_size == 4) {  // Every kernel so far: int common_pid.
    uint32_t pid;
    memcpy(&pid, data + t.pid_offset, 4);  // Inside: size >= min_size.
    p = PutVarIntField(p, FtraceEvent::kPidFieldNumber, pid);
  } else if (t.pid_size) {
    p = PutVarIntField(p, FtraceEvent::kPidFieldNumber,
                       static_cast<uint32_t>(ReadInt(data, size, t.pid_offset, t.pid_size, true)));
  }
  memcpy(p, t.event_tag, sizeof(t.event_tag));
  p += t.event_tag_size;
  uint8_t* const body_len = p;
  p += 2;
  uint8_t* const body = p;
  p = EncodeFields(t, record, p);
  Put2ByteVarInt(body_len, static_cast<uint32_t>(p - body));
  Put2ByteVarInt(event_len, static_cast<uint32_t>(p - (event_len + 2)));
  return p;
}

void FtraceEventTranslator::WriteEventNested(const FtraceEventTranslation& t,
                                             const FtraceRecord& record, ProtoWriter* w) const {
  const uint8_t* data = record.data;
  const uint32_t size = record.size;
  w->BeginNested(FtraceEventBundle::kEventFieldNumber);
  w->WriteVarInt(FtraceEvent::kTimestampFieldNumber, record.timestamp);
  if (t.pid_size)
    w->WriteVarInt(FtraceEvent::kPidFieldNumber,
                   static_cast<uint32_t>(ReadInt(data, size, t.pid_offset, t.pid_size, true)));
  w->BeginNested(t.proto_field);
  if (!t.prefix_bytes.empty()) w->WriteRaw(t.prefix_bytes.data(), t.prefix_bytes.size());
  for (const FtraceFieldTranslation& f : t.fields) {
    const FtraceFieldFormat& ff = *f.format;
    switch (f.wire) {
      case FtraceFieldTranslation::Wire::kVarInt:
        w->WriteVarInt(f.proto_field, ReadInt(data, size, ff.offset, ff.size, ff.is_signed));
        break;
      case FtraceFieldTranslation::Wire::kZigZag:
        w->WriteVarInt(f.proto_field, ZigZag(ReadInt(data, size, ff.offset, ff.size, ff.is_signed)));
        break;
      case FtraceFieldTranslation::Wire::kString:
        w->WriteString(f.proto_field, ReadString(ff, data, size));
        break;
      case FtraceFieldTranslation::Wire::kRepeatedVarInt: {
        const uint32_t n = ff.element_size ? ff.size / ff.element_size : 0;
        for (uint32_t i = 0; i < n; i++)
          w->WriteVarInt(f.proto_field, ReadInt(data, size, ff.offset + i * ff.element_size,
                                                ff.element_size, ff.is_signed));
        break;
      }
      case FtraceFieldTranslation::Wire::kGenericString:
      case FtraceFieldTranslation::Wire::kGenericInt:
      case FtraceFieldTranslation::Wire::kGenericUint:
        w->BeginNested(GenericFtraceEvent::kFieldFieldNumber);
        w->WriteRaw(f.generic_name_bytes.data(), f.generic_name_bytes.size());
        if (f.wire == FtraceFieldTranslation::Wire::kGenericString)
          w->WriteString(f.proto_field, ReadString(ff, data, size));
        else
          w->WriteVarInt(f.proto_field, ReadInt(data, size, ff.offset, ff.size, ff.is_signed));
        w->EndNested();
        break;
    }
  }
  w->EndNested();
  w->EndNested();
}

}  // namespace sluice
