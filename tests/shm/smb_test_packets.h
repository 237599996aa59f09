// Test packets for the shm tests: sequence-numbered, self-checking, with three
// levels of nesting so that large ones need patches.
#ifndef SLUICE_TESTS_SHM_SMB_TEST_PACKETS_H_
#define SLUICE_TESTS_SHM_SMB_TEST_PACKETS_H_

#include <cstdint>
#include <string>

#include "perfetto/trace/ftrace/ftrace.pb.h"
#include "perfetto/trace/ftrace/ftrace_event.pb.h"
#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "shm/trace_writer.h"

namespace sluice::testing {

inline std::string TestPayload(uint64_t seq, uint32_t size) {
  std::string s(size, '\0');
  for (uint32_t i = 0; i < size; i++) s[i] = static_cast<char>('a' + (seq * 31 + i) % 26);
  return s;
}

// payload_size 0 writes a bare packet (timestamp only, 2..10 bytes).
inline void WriteTestPacket(TraceWriter* writer, uint32_t stream, uint64_t seq,
                            uint32_t payload_size) {
  using perfetto::protos::FtraceEvent;
  using perfetto::protos::FtraceEventBundle;
  using perfetto::protos::PrintFtraceEvent;
  using perfetto::protos::TracePacket;
  auto packet = writer->NewTracePacket();
  packet->WriteVarInt(TracePacket::kTimestampFieldNumber, seq);
  if (payload_size == 0) return;
  packet->BeginNested(TracePacket::kFtraceEventsFieldNumber);
  packet->WriteVarInt(FtraceEventBundle::kCpuFieldNumber, stream);
  packet->BeginNested(FtraceEventBundle::kEventFieldNumber);
  packet->WriteVarInt(FtraceEvent::kPidFieldNumber, payload_size);
  packet->BeginNested(FtraceEvent::kPrintFieldNumber);
  std::string payload = TestPayload(seq, payload_size);
  packet->WriteString(PrintFtraceEvent::kBufFieldNumber, payload);
  packet->EndNested();
  packet->EndNested();
  packet->EndNested();
}

// Decodes a packet written by WriteTestPacket; false if it is damaged.
inline bool CheckTestPacket(const std::string& bytes, uint32_t stream, uint64_t* seq) {
  perfetto::protos::TracePacket p;
  if (!p.ParseFromString(bytes)) return false;
  *seq = p.timestamp();
  if (!p.has_ftrace_events()) return true;
  if (p.ftrace_events().cpu() != stream || p.ftrace_events().event_size() != 1) return false;
  const auto& e = p.ftrace_events().event(0);
  return e.print().buf() == TestPayload(*seq, e.pid());
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_SHM_SMB_TEST_PACKETS_H_
