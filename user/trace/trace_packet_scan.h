// TracePacketScan: what `sluice stats` and the `sluice record` summary need
// from one TracePacket, read off the wire without building messages.
//
// Ftrace bundles are nearly all of a trace's bytes. Parsing each into
// libprotobuf messages to count its events cost as much CPU as a fifth of the
// recording itself (8.9 M events: 0.1 s); the scan walks the same bytes and
// only counts. It checks the wire structure down to each event's own fields
// (tags, lengths, varints, packed arrays) and fails on anything libprotobuf
// would refuse there; it does not look inside an event's fields (a corrupt
// sched_switch payload is not seen), which the full decoders downstream do.
#ifndef SLUICE_USER_TRACE_TRACE_PACKET_SCAN_H_
#define SLUICE_USER_TRACE_TRACE_PACKET_SCAN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice {

struct TracePacketScan {
  bool has_sequence_id = false;
  uint32_t sequence_id = 0;              // trusted_packet_sequence_id (10)
  uint64_t previous_packet_dropped = 0;  // (42)
  bool first_packet_on_sequence = false; // (87)
  uint32_t machine_id = 0;               // (98): 0 for the host's packets
  // ftrace_stats, trace_stats, bpf_stats or remote_clock_sync are present:
  // parse the packet in full for those (they are small and rare).
  bool has_stats = false;
  // trace_config (33): the service writes it once, first; small too.
  bool has_trace_config = false;

  // ftrace_events (1). If the field occurs more than once, the occurrences
  // merge as libprotobuf merges them: events add up, the last cpu and
  // lost_events win.
  bool has_bundle = false;
  uint32_t bundle_cpu = 0;
  bool bundle_lost_events = false;
  uint64_t events = 0;  // FtraceEvents plus compact_sched switches and wakings.
  // FtraceEvent `event` oneof field number -> events of that kind; 0 = an
  // event with no oneof member set. Compact switches and wakings count under
  // sched_switch's and sched_waking's numbers. A handful of kinds per bundle,
  // so a vector searched linearly.
  std::vector<std::pair<uint32_t, uint64_t>> events_by_field;
};

// Fills *out from `packet`; false when the wire structure is malformed (the
// caller counts the packet as unparsable and uses nothing of *out).
bool ScanTracePacket(std::string_view packet, TracePacketScan* out);

// The FtraceEvent field name for an events_by_field key ("unknown" for 0 or a
// number this build does not know).
std::string FtraceEventFieldName(uint32_t field);

}  // namespace sluice

#endif  // SLUICE_USER_TRACE_TRACE_PACKET_SCAN_H_
