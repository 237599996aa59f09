#include "user/ftrace_event_translator.h"

#include <algorithm>
#include <cstring>

#include <google/protobuf/descriptor.h>

#include "perfetto/trace/ftrace/ftrace_event.pb.h"
#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "perfetto/trace/ftrace/generic.pb.h"

namespace sluice {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using perfetto::protos::FtraceEvent;
using perfetto::protos::FtraceEventBundle;
using perfetto::protos::GenericFtraceEvent;
using perfetto::protos::GenericFtraceEvent_Field;

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

}  // namespace

// static
std::string_view FtraceEventTranslator::ReadString(const FtraceFieldFormat& field,
                                                   const uint8_t* data,
                                                   uint32_t record_size) {
  uint32_t start = 0, len = 0;
  switch (field.kind) {
    case FtraceFieldKind::kFixedString:
      if (field.offset >= record_size) return {};
      start = field.offset;
      len = std::min(field.size, record_size - field.offset);
      break;
    case FtraceFieldKind::kTrailingString:
      if (field.offset >= record_size) return {};
      start = field.offset;
      len = record_size - field.offset;
      break;
    case FtraceFieldKind::kDataLocString:
    case FtraceFieldKind::kRelLocString: {
      if (field.offset > record_size || record_size - field.offset < 4) return {};
      uint32_t loc;
      memcpy(&loc, data + field.offset, 4);
      start = loc & 0xffff;
      len = loc >> 16;
      // __rel_loc counts from the end of the 4-byte field.
      if (field.kind == FtraceFieldKind::kRelLocString) start += field.offset + 4;
      if (start > record_size || len > record_size - start) return {};
      break;
    }
    default:
      return {};
  }
  const char* s = reinterpret_cast<const char*>(data + start);
  return std::string_view(s, strnlen(s, len));
}

FtraceEventTranslator::FtraceEventTranslator(const FtraceFormatTable* table) : table_(table) {
  const Descriptor* ftrace_event = FtraceEvent::descriptor();
  const Descriptor* generic = GenericFtraceEvent::descriptor();
  for (const FtraceEventFormat* format : table->events()) {
    auto t = std::make_unique<FtraceEventTranslation>();
    t->format = format;
    if (const FtraceFieldFormat* pid = format->FindField("common_pid");
        pid && pid->kind == FtraceFieldKind::kInt) {
      t->pid_offset = pid->offset;
      t->pid_size = pid->size;
    }
    if (const FtraceFieldFormat* flags = format->FindField("common_flags");
        flags && flags->kind == FtraceFieldKind::kInt) {
      t->flags_offset = flags->offset;
      t->flags_size = flags->size;
    }
    const FieldDescriptor* event_field = ftrace_event->FindFieldByName(format->name);
    if (event_field && event_field->type() == FieldDescriptor::TYPE_MESSAGE &&
        event_field->message_type() != generic &&
        event_field->containing_oneof() != nullptr) {
      t->proto_field = static_cast<uint32_t>(event_field->number());
      t->proto_name = "FtraceEvent." + std::string(event_field->name());
      t->write_common_flags =
          event_field->number() == FtraceEvent::kSchedWakingFieldNumber && t->flags_size > 0;
      BuildKnown(t.get(), event_field->message_type());
    } else {
      t->generic = true;
      t->proto_field = FtraceEvent::kGenericFieldNumber;
      t->proto_name = "FtraceEvent.generic";
      BuildGeneric(t.get());
    }
    if (format->id >= by_id_.size()) by_id_.resize(format->id + 1, nullptr);
    by_id_[format->id] = t.get();
    translations_.push_back(std::move(t));
  }
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
  t->generic_name_bytes = EncodeStringField(GenericFtraceEvent::kEventNameFieldNumber,
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

bool FtraceEventTranslator::WriteEvent(const FtraceEventTranslation& t,
                                       const FtraceRecord& record, ProtoWriter* w) const {
  const uint8_t* data = record.data;
  const uint32_t size = record.size;
  if (size < t.format->min_size) return false;
  w->BeginNested(FtraceEventBundle::kEventFieldNumber);
  w->WriteVarInt(FtraceEvent::kTimestampFieldNumber, record.timestamp);
  if (t.pid_size) {
    uint64_t pid = ReadInt(data, size, t.pid_offset, t.pid_size, true);
    w->WriteVarInt(FtraceEvent::kPidFieldNumber, static_cast<uint32_t>(pid));
  }
  if (t.write_common_flags)
    w->WriteVarInt(FtraceEvent::kCommonFlagsFieldNumber,
                   ReadInt(data, size, t.flags_offset, t.flags_size, false));
  w->BeginNested(t.proto_field);
  if (t.generic) w->WriteRaw(t.generic_name_bytes.data(), t.generic_name_bytes.size());
  for (const FtraceFieldTranslation& f : t.fields) {
    const FtraceFieldFormat& ff = *f.format;
    switch (f.wire) {
      case FtraceFieldTranslation::Wire::kVarInt:
        w->WriteVarInt(f.proto_field, ReadInt(data, size, ff.offset, ff.size, ff.is_signed));
        break;
      case FtraceFieldTranslation::Wire::kZigZag:
        w->WriteSInt(f.proto_field, static_cast<int64_t>(
                                        ReadInt(data, size, ff.offset, ff.size, ff.is_signed)));
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
  return true;
}

}  // namespace sluice
