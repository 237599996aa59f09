#include "service/trace_stats_period.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <string>
#include <vector>

namespace sluice {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// 64-bit fields that name or size something rather than count events.
bool IsMomentValue(const FieldDescriptor* field) {
  const std::string& name = field->name();
  return name == "buffer_size" || name == "sequence_id" || name == "snapshot_of_session" ||
         name == "clock_error_ns" || name == "max_clock_error_ns";
}

// 32-bit fields are values of the moment (producers_connected,
// total_buffers, ...), except sluice's disconnect counters.
bool IsCounter32(const FieldDescriptor* field) {
  return field->name().rfind("producers_disconnected", 0) == 0;
}

template <typename T>
T Since(T earlier, T later) {
  return later >= earlier ? later - earlier : later;
}

void SubtractCounters(const Message& earlier, Message* later) {
  const Reflection* re = later->GetReflection();
  const Reflection* re_earlier = earlier.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  re->ListFields(*later, &fields);
  for (const FieldDescriptor* f : fields) {
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated()) {
        const int n = std::min(re->FieldSize(*later, f), re_earlier->FieldSize(earlier, f));
        for (int i = 0; i < n; i++)
          SubtractCounters(re_earlier->GetRepeatedMessage(earlier, f, i),
                           re->MutableRepeatedMessage(later, f, i));
      } else if (re_earlier->HasField(earlier, f)) {
        SubtractCounters(re_earlier->GetMessage(earlier, f), re->MutableMessage(later, f));
      }
      continue;
    }
    if (f->is_repeated()) {
      // Histograms: element by element when both have the same buckets.
      if (f->cpp_type() != FieldDescriptor::CPPTYPE_UINT64) continue;
      const int n = re->FieldSize(*later, f);
      if (n != re_earlier->FieldSize(earlier, f)) continue;
      for (int i = 0; i < n; i++)
        re->SetRepeatedUInt64(later, f, i,
                              Since(re_earlier->GetRepeatedUInt64(earlier, f, i), re->GetRepeatedUInt64(*later, f, i)));
      continue;
    }
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_UINT64 && !IsMomentValue(f)) {
      re->SetUInt64(later, f, Since(re_earlier->GetUInt64(earlier, f), re->GetUInt64(*later, f)));
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_UINT32 && IsCounter32(f)) {
      re->SetUInt32(later, f, Since(re_earlier->GetUInt32(earlier, f), re->GetUInt32(*later, f)));
    }
  }
}

}  // namespace

perfetto::protos::TraceStats TraceStatsSince(const perfetto::protos::TraceStats& earlier,
                                             const perfetto::protos::TraceStats& later) {
  perfetto::protos::TraceStats period = later;
  SubtractCounters(earlier, &period);
  return period;
}

}  // namespace sluice
