// libFuzzer target: a trace file as `sluice stats` and the `sluice record`
// summary read it. The input is the file's bytes: Trace.packet records,
// compressed containers (deflate and zstd, decompressed with their size
// limit), then the health analysis and its table. Seeds:
// tests/fuzz/corpus/trace_file_fuzzer/ (zstd_*: zstd_compressed_packets, one
// with its frame cut off).
//
// It also checks the wire scanner against libprotobuf on every packet: when
// libprotobuf parses a packet, the scan must accept it and count the same
// events and kinds, and a packet the scan refuses must be one libprotobuf
// refuses too.
//
//   make fuzz    (or: build/fuzz/trace_file_fuzzer -max_total_time=60)
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <string_view>

#include <google/protobuf/stubs/logging.h>

#include "perfetto/trace/ftrace/ftrace_event.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "user/trace/trace_file_reader.h"
#include "user/trace/trace_health.h"
#include "user/trace/trace_packet_scan.h"

namespace {

void Die(const char* what) {
  fprintf(stderr, "trace_file_fuzzer: %s\n", what);
  abort();
}

void CheckScanAgainstLibprotobuf(std::string_view bytes) {
  perfetto::protos::TracePacket p;
  bool parsed = p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  sluice::TracePacketScan scan;
  bool scanned = sluice::ScanTracePacket(bytes, &scan);
  if (!scanned) {
    if (parsed) Die("scan refused a packet libprotobuf parses");
    return;
  }
  if (!parsed) return;  // The scan does not look inside events' fields.
  if (scan.has_bundle != p.has_ftrace_events()) Die("has_bundle differs");
  if (scan.has_sequence_id != p.has_trusted_packet_sequence_id()) Die("has_sequence_id differs");
  if (scan.has_sequence_id && scan.sequence_id != p.trusted_packet_sequence_id()) Die("sequence id differs");
  if (scan.previous_packet_dropped != p.previous_packet_dropped()) Die("previous_packet_dropped differs");
  if (scan.first_packet_on_sequence != p.first_packet_on_sequence()) Die("first_packet_on_sequence differs");
  if (!p.has_ftrace_events()) return;
  const auto& b = p.ftrace_events();
  if (scan.bundle_cpu != b.cpu() || scan.bundle_lost_events != b.lost_events()) Die("bundle header differs");
  std::map<uint32_t, uint64_t> want;
  for (const auto& e : b.event()) want[static_cast<uint32_t>(e.event_case())]++;
  if (auto n = b.compact_sched().switch_timestamp_size())
    want[perfetto::protos::FtraceEvent::kSchedSwitchFieldNumber] += static_cast<uint64_t>(n);
  if (auto n = b.compact_sched().waking_timestamp_size())
    want[perfetto::protos::FtraceEvent::kSchedWakingFieldNumber] += static_cast<uint64_t>(n);
  std::map<uint32_t, uint64_t> got;
  uint64_t total = 0;
  for (const auto& [field, n] : scan.events_by_field) {
    got[field] += n;
    total += n;
  }
  if (got != want || total != scan.events) Die("event counts differ");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool quiet = (google::protobuf::SetLogHandler(nullptr), true);  // Parse-failure chatter.
  (void)quiet;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  sluice::TraceFileSummary summary;
  (void)sluice::ReadTraceBytes(bytes, [](std::string_view packet) { CheckScanAgainstLibprotobuf(packet); },
                               &summary);
  auto health = sluice::AnalyzeTraceBytes(bytes);
  if (health.ok()) (void)sluice::FormatHealthTable(*health);
  // The input as a single packet too: most mutations of a record stream
  // break its framing before they reach the scanner.
  CheckScanAgainstLibprotobuf(bytes);
  return 0;
}
