// TraceFileWriter: streams packets into a trace file (write_into_file).
//
// The file is a perfetto.protos.Trace: a sequence of field-1
// length-delimited records, each one serialized TracePacket:
//
//   ┌──────┬──────────────────┬──────────────────────┐
//   │ 0x0A │ varint length n  │ n bytes: TracePacket │  ... repeated
//   └──────┴──────────────────┴──────────────────────┘
//
// Only whole records are written (each write(2) covers whole records), so
// the file is a valid trace at every moment between writes: a reader may
// open it while the trace is still running. No fsync: durability across a
// power cut is not a goal.
//
// max_file_size_bytes (TraceConfig) caps the file: the first record that
// would cross the cap is not written and the writer reports "full"; the
// service then stops the session (docs/SERVICE.md). The last
// kTrailerReserveBytes under the cap are kept for the final service packets
// (TraceStats, clock snapshot), so a capped trace still says what it lost.
//
// Not thread-safe: the service writes from its own thread.
#ifndef SLUICE_SERVICE_TRACE_FILE_WRITER_H_
#define SLUICE_SERVICE_TRACE_FILE_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "service/ipc/ipc_socket.h"
#include "shm/base/status.h"
#include "shm/base/varint.h"

namespace sluice {


class TraceFileWriter {
 public:
  // Takes ownership of `fd`. max_size_bytes = 0: no cap.
  TraceFileWriter(ScopedFd fd, uint64_t max_size_bytes);

  // Room kept under the cap for the trailer (when the cap is at least 4x it).
  static constexpr uint64_t kTrailerReserveBytes = 16 * 1024;

  // Writes as many of `packets` as fit under the cap, in order. `trailer`:
  // these are the final service packets and may use the reserve. Returns an
  // error if write(2) failed (disk full, EIO); the file then ends at the last
  // whole record written.
  Status WritePackets(const std::vector<std::string>& packets, bool trailer = false);

  bool full() const { return full_; }
  uint64_t bytes_written() const { return bytes_written_; }
  uint64_t packets_written() const { return packets_written_; }
  // Packets not written because the cap was reached.
  uint64_t packets_dropped() const { return packets_dropped_; }

 private:
  Status WriteAll(const std::string& bytes);

  ScopedFd fd_;
  const uint64_t max_size_bytes_;
  uint64_t bytes_written_ = 0;
  uint64_t packets_written_ = 0;
  uint64_t packets_dropped_ = 0;
  bool full_ = false;
  bool failed_ = false;
  std::string batch_;
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_TRACE_FILE_WRITER_H_
