// The smallest trace the query engine imports (one packet with a
// timestamp), for fuzzers that exercise what runs on an engine rather than
// the import itself.
#ifndef SLUICE_TESTS_FUZZ_TINY_TRACE_H_
#define SLUICE_TESTS_FUZZ_TINY_TRACE_H_

#include <string>

#include "perfetto/trace/trace_packet.pb.h"
#include "shm/base/varint.h"

namespace sluice::fuzzing {

inline std::string TinyTrace() {
  perfetto::protos::TracePacket packet;
  packet.set_timestamp(1000);
  packet.set_trusted_packet_sequence_id(1);
  std::string bytes;
  AppendTracePacketRecord(packet.SerializeAsString(), &bytes);
  return bytes;
}

}  // namespace sluice::fuzzing

#endif  // SLUICE_TESTS_FUZZ_TINY_TRACE_H_
