// FtraceEventSchema: names and arg types of every ftrace event this build
// knows, taken from the FtraceEvent proto's descriptor (the `event` oneof:
// field name = event name, e.g. "sched_switch"; its message's fields = the
// args, named as in the proto, which is how Perfetto names them too).
//
// Built lazily per event kind, so decoding an event is a table lookup per
// field, not a descriptor search.
#ifndef SLUICE_USER_QUERY_IMPORTER_FTRACE_EVENT_SCHEMA_H_
#define SLUICE_USER_QUERY_IMPORTER_FTRACE_EVENT_SCHEMA_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "user/query/storage/arg_set_store.h"
#include "user/query/storage/string_pool.h"

namespace sluice {

// One FtraceEvent as it sits on the wire.
struct FtraceEventView {
  bool has_timestamp = false;
  uint64_t timestamp = 0;
  uint32_t pid = 0;            // The task the event was recorded in.
  uint32_t common_flags = 0;
  uint32_t event_field = 0;    // The `event` oneof member; 0 when none.
  std::string_view payload;    // That member's bytes.
};

// False when the bytes are not a well-formed FtraceEvent.
bool ParseFtraceEvent(std::string_view bytes, FtraceEventView* out);

// A decoded event field: its number (for the importer's own use) and the
// arg it becomes.
struct EventField {
  uint32_t number = 0;
  Arg arg;
};

class FtraceEventSchema {
 public:
  explicit FtraceEventSchema(StringPool* strings);
  ~FtraceEventSchema();

  // The event name for oneof member `field` ("sched_switch"), or
  // "unknown_event_<N>" for one this build has no proto for.
  StringId EventName(uint32_t field);
  // Decodes `payload` of an event of kind `field` into its fields, in wire
  // order. Unknown fields of a known event are skipped; for an unknown event
  // no args. False on malformed bytes (fields decoded so far are kept).
  bool DecodeFields(uint32_t field, std::string_view payload, std::vector<EventField>* out);
  // The oneof field number of the event named `name` (0 if unknown), and the
  // field number of `arg` within it, for the importer's special cases.
  uint32_t EventFieldNumber(std::string_view name) const;
  // Puts `args` (made from `fields`, same order) in key text order using
  // ranks computed once per event kind: no string compares per event.
  // True when it did (false: unknown kind, the caller sorts).
  bool SortByKey(uint32_t field, const std::vector<EventField>& fields, std::vector<Arg>* args);
  uint32_t ArgFieldNumber(std::string_view event, std::string_view arg) const;

 private:
  struct EventKind;
  EventKind* Kind(uint32_t field);

  StringPool* strings_;
  std::vector<std::unique_ptr<EventKind>> kinds_;  // By oneof field number.
  std::vector<uint32_t> order_;                     // SortByKey's scratch.
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_FTRACE_EVENT_SCHEMA_H_
