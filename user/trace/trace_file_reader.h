// TraceFileReader: reads a trace file (perfetto.protos.Trace) packet by packet
// without trusting it.
//
// A trace file is a sequence of `Trace.packet` records: tag 0x0a, a varint
// length, the TracePacket bytes. A file cut off mid-record (a recorder killed
// while streaming) is valid up to its last complete record; the reader says
// where the cut is instead of failing. Compressed containers, packets with
// compressed_packets (zlib) or zstd_compressed_packets (one zstd frame; what
// `sluice record --compress` and TraceConfig.compression write), are
// decompressed and their inner packets returned in order. A container that
// decompresses to more than 256 MiB, does not decompress, is cut off, holds
// more than its one frame, a cut-off record or another container is an error
// naming it.
#ifndef SLUICE_USER_TRACE_TRACE_FILE_READER_H_
#define SLUICE_USER_TRACE_TRACE_FILE_READER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "shm/base/status.h"
#include "shm/base/varint.h"

namespace sluice {

struct TraceFileSummary {
  uint64_t packets = 0;
  uint64_t bytes = 0;               // File size.
  uint64_t valid_bytes = 0;         // Up to the end of the last complete record.
  bool truncated = false;           // Trailing bytes that are not a whole record.
  uint64_t compressed_containers = 0;
};

// Calls on_packet for every packet of the file at `path`. Fails (one line
// naming the cause) only when the file cannot be read, or a record is not a
// Trace.packet record, or a compressed container does not inflate; a cut-off
// tail sets summary->truncated instead.
Status ReadTraceFile(const std::string& path,
                     const std::function<void(std::string_view packet)>& on_packet,
                     TraceFileSummary* summary);

// The same over bytes in memory (tests, fuzzers).
Status ReadTraceBytes(std::string_view bytes,
                      const std::function<void(std::string_view packet)>& on_packet,
                      TraceFileSummary* summary);


// zlib-deflates a run of Trace.packet records into one compressed_packets
// packet's record (Perfetto's compressed_packets form).
StatusOr<std::string> CompressPacketRecords(std::string_view records);

}  // namespace sluice

#endif  // SLUICE_USER_TRACE_TRACE_FILE_READER_H_
