#include "user/query/summary/trace_summary_text.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>

#include <cinttypes>
#include <cstdio>
#include <algorithm>
#include <map>
#include <vector>

namespace sluice {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

std::string QuotedString(const std::string& raw) {
  std::string out = "\"";
  for (char c : raw) {
    switch (c) {
      case '\a': out += "\\a"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\v': out += "\\v"; break;
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      case '"': out += "\\\""; break;
      default:
        if (c >= 0x20 && c <= 0x7e) {
          out += c;
        } else {
          const auto byte = static_cast<unsigned char>(c);
          out += '\\';
          out += static_cast<char>('0' + (byte >> 6));
          out += static_cast<char>('0' + ((byte >> 3) & 7));
          out += static_cast<char>('0' + (byte & 7));
        }
    }
  }
  return out + "\"";
}

// Field numbers in the order upstream writes them, for the messages whose
// order is not field-number order.
std::vector<int> WrittenOrder(const google::protobuf::Descriptor* type) {
  const std::string& name = type->full_name();
  if (name == "perfetto.protos.TraceSummary") return {3, 2};
  if (name == "perfetto.protos.TraceMetricV2Bundle") return {1, 3, 2, 4};
  if (name == "perfetto.protos.TraceMetricV2Bundle.Row") return {2, 1};
  std::vector<int> numbers;
  for (int i = 0; i < type->field_count(); i++) numbers.push_back(type->field(i)->number());
  std::sort(numbers.begin(), numbers.end());
  return numbers;
}

class Writer {
 public:
  std::string Take() { return std::move(out_); }

  void Fields(const Message& message) {
    const auto* reflection = message.GetReflection();
    for (int number : WrittenOrder(message.GetDescriptor())) {
      const FieldDescriptor* field = message.GetDescriptor()->FindFieldByNumber(number);
      if (!field) continue;
      if (field->is_repeated()) {
        for (int i = 0; i < reflection->FieldSize(message, field); i++) Field(message, field, i);
      } else if (reflection->HasField(message, field)) {
        Field(message, field, -1);
      }
    }
  }

 private:
  // `index` -1 for a singular field.
  void Field(const Message& message, const FieldDescriptor* field, int index) {
    const auto* r = message.GetReflection();
    const bool repeated = index >= 0;
    // Each field starts a line, except the very first one of the output.
    if (!out_.empty()) out_ += "\n";
    out_ += indent_ + field->name();
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_MESSAGE: {
        out_ += " {";
        indent_ += "  ";
        Fields(repeated ? r->GetRepeatedMessage(message, field, index) : r->GetMessage(message, field));
        indent_.resize(indent_.size() - 2);
        out_ += "\n" + indent_ + "}";
        return;
      }
      case FieldDescriptor::CPPTYPE_STRING:
        out_ += ": " + QuotedString(repeated ? r->GetRepeatedString(message, field, index) : r->GetString(message, field));
        return;
      case FieldDescriptor::CPPTYPE_ENUM:
        out_ += ": " + (repeated ? r->GetRepeatedEnum(message, field, index) : r->GetEnum(message, field))->name();
        return;
      case FieldDescriptor::CPPTYPE_BOOL:
        out_ += (repeated ? r->GetRepeatedBool(message, field, index) : r->GetBool(message, field)) ? ": true" : ": false";
        return;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        out_ += ": " + std::to_string(repeated ? r->GetRepeatedDouble(message, field, index) : r->GetDouble(message, field));
        return;
      case FieldDescriptor::CPPTYPE_FLOAT:
        out_ += ": " + std::to_string(repeated ? r->GetRepeatedFloat(message, field, index) : r->GetFloat(message, field));
        return;
      case FieldDescriptor::CPPTYPE_INT64:
        out_ += ": " + std::to_string(repeated ? r->GetRepeatedInt64(message, field, index) : r->GetInt64(message, field));
        return;
      case FieldDescriptor::CPPTYPE_UINT64:
        out_ += ": " + std::to_string(repeated ? r->GetRepeatedUInt64(message, field, index) : r->GetUInt64(message, field));
        return;
      case FieldDescriptor::CPPTYPE_INT32:
        out_ += ": " + std::to_string(repeated ? r->GetRepeatedInt32(message, field, index) : r->GetInt32(message, field));
        return;
      case FieldDescriptor::CPPTYPE_UINT32:
        out_ += ": " + std::to_string(repeated ? r->GetRepeatedUInt32(message, field, index) : r->GetUInt32(message, field));
        return;
    }
  }

  std::string out_;
  std::string indent_;
};

}  // namespace

std::string TraceSummaryText(const perfetto::protos::TraceSummary& summary) {
  Writer writer;
  writer.Fields(summary);
  return writer.Take();
}

}  // namespace sluice
