// Stamping trusted fields into the packets a producer wrote.
//
// A TracePacket carries who wrote it: trusted_uid (field 3),
// trusted_packet_sequence_id (field 10), trusted_pid (field 79) and, for a
// relayed machine's producers, machine_id (field 98) (upstream
// protos/perfetto/trace/trace_packet.proto; checked against the generated
// code in tests/service/trusted_packet_test.cc). Only the service may set
// them: a producer could otherwise pose as another process or splice its
// packets into another producer's sequence. So on the way out of the central
// buffer the service
//   1. scans the packet's top-level fields (validating the wire format),
//   2. drops every occurrence of fields 3, 10, 79 and 98 the producer wrote,
//   3. appends the values it knows (from SO_PEERCRED and its own sequence
//      numbering), plus previous_packet_dropped (field 42) when the central
//      buffer saw a gap before this packet.
// Appending last also means a parser that keeps the last value of a field
// sees the trusted one. A packet whose top level does not parse is dropped
// and counted (TraceStats.invalid_packets). Nested messages are not looked
// into: a producer cannot forge a top-level field from inside one.
//
// Read path, not commit path: one scan per packet, and a copy only when a
// forged field has to be cut out.
#ifndef SLUICE_SERVICE_TRUSTED_PACKET_H_
#define SLUICE_SERVICE_TRUSTED_PACKET_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace sluice {

inline constexpr uint32_t kTrustedUidField = 3;
inline constexpr uint32_t kTrustedPacketSequenceIdField = 10;
inline constexpr uint32_t kPreviousPacketDroppedField = 42;
inline constexpr uint32_t kTrustedPidField = 79;
inline constexpr uint32_t kMachineIdField = 98;

struct TrustedFields {
  int32_t uid = 0;
  uint32_t sequence_id = 0;
  int32_t pid = 0;
  // Central buffer saw packets lost right before this one on the sequence.
  bool previous_packet_dropped = false;
  // The machine the producer runs on (0: this one; a relayed guest's
  // producers: its id, service/relay/). Written only when not 0.
  uint32_t machine_id = 0;
};

// The most StampTrustedFields appends, tag and value of each field: uid and
// pid (int32, sign-extended to ten bytes when negative), sequence id and
// machine id (five), previous_packet_dropped (one); fields 3 and 10 take a
// one-byte tag, 42, 79 and 98 two. A reader that leaves this much
// capacity after a packet (TraceBuffer's tailroom) has it stamped without a
// reallocation, and the copy that comes with one.
inline constexpr size_t kMaxTrustedFieldsBytes = (1 + 10) + (1 + 5) + (2 + 10) + (2 + 1) + (2 + 5);

// Rewrites *packet_untrusted in place. False (packet unusable, leave it out
// of the trace) if its top-level wire format is invalid.
// `state_field`, if given, gets the number of a top-level field that holds
// state a trace file needs at its head (kStatePacketFields), 0 if none: the
// scan reads the top level anyway, so a rotating session learns for free
// which packets to carry into its next file (tracing_service_session.cc).
bool StampTrustedFields(std::string* packet_untrusted, const TrustedFields& trusted,
                        uint32_t* state_field = nullptr);

// TracePacket's process_tree (2), ftrace_stats (34), system_info (45) and
// cpu_info (67).
inline constexpr uint32_t kProcessTreeField = 2;
inline constexpr uint32_t kFtraceStatsField = 34;
inline constexpr uint32_t kSystemInfoField = 45;
inline constexpr uint32_t kCpuInfoField = 67;

}  // namespace sluice

#endif  // SLUICE_SERVICE_TRUSTED_PACKET_H_
