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
// Write errors (the disk fills: ENOSPC; EDQUOT, EFBIG, EIO). write(2) may
// write part of a batch before it fails, ending the file inside a record.
// The writer cuts the file back to the end of the last whole record
// (ftruncate, which needs no free space), so the file stays a valid trace up
// to its last byte, and from then on writes nothing: every later packet is
// counted as lost. FailureMessage() says what happened in one line that
// starts with kTraceFileErrorPrefix, for the consumer to replace with the
// file's name (only the consumer knows it: the service got an fd):
//
//   trace file: no space left on device after 524288 bytes (6 packets
//   written, the file is valid up to there); 14 packets (1867412 bytes)
//   after that were not written; free space there or write the trace
//   elsewhere
//
// Compressed files (TraceConfig.compression; service/packet_compressor.h):
// the packets go through a PacketCompressor into containers of whole records
// (under 512 KiB each), and each write(2) covers whole containers, so the
// file is a valid trace between writes as above. A container stays open
// across WritePackets calls until it is full; Flush() closes and writes it,
// leaving a file that holds every packet given so far and ends between two
// containers (where a rotation may cut). A trailer write flushes too. The
// cap counts the bytes on disk: a container that would cross it is not
// written (its packets count as dropped). Packets and bytes lost count the
// packets' records before compression.
//
// Not thread-safe: the service writes from its own thread.
#ifndef SLUICE_SERVICE_TRACE_FILE_WRITER_H_
#define SLUICE_SERVICE_TRACE_FILE_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "service/ipc/ipc_socket.h"
#include "service/packet_compressor.h"
#include "shm/base/status.h"
#include "shm/base/varint.h"

namespace sluice {

// Every write error of a TraceFileWriter starts with this (see above).
inline constexpr std::string_view kTraceFileErrorPrefix = "trace file: ";

class TraceFileWriter {
 public:
  // Takes ownership of `fd`. max_size_bytes = 0: no cap. A codec that
  // cannot be set up or fails (out of memory) is a write error (ENOMEM).
  TraceFileWriter(ScopedFd fd, uint64_t max_size_bytes, TraceCompression compression = {});
  ~TraceFileWriter();

  // Room kept under the cap for the trailer (when the cap is at least 4x it).
  static constexpr uint64_t kTrailerReserveBytes = 16 * 1024;

  // Writes as many of `packets` as fit under the cap, in order. `trailer`:
  // these are the final service packets and may use the reserve. Returns
  // FailureMessage() if write(2) failed, now or in an earlier call; the file
  // then ends at the last whole record written.
  Status WritePackets(const std::vector<std::string>& packets, bool trailer = false);
  // Compressed files: closes the open container and writes it (see above).
  // Nothing to do for an uncompressed file, whose packets are written by
  // WritePackets. Returns as WritePackets.
  Status Flush();

  TraceCompression compression() const { return compression_; }

  bool full() const { return full_; }
  bool failed() const { return write_errno_ != 0; }
  // Whole records in the file (after a write error: up to the cut).
  uint64_t bytes_written() const { return bytes_written_; }
  uint64_t packets_written() const { return packets_written_; }
  // Packets not written because the cap was reached.
  uint64_t packets_dropped() const { return packets_dropped_; }
  // Packets, and their record bytes, not written because of a write error.
  uint64_t packets_lost() const { return packets_lost_; }
  uint64_t bytes_lost() const { return bytes_lost_; }
  // After a write error: the cause, what the file holds, what it misses and
  // the fix, in one line (see above). Empty before.
  std::string FailureMessage() const;

 private:
  // Writes batch_; on a write error keeps its whole records, cuts a partial
  // one off the file, and counts the rest as lost (with the open container).
  Status WriteBatch();
  void CountLost(const std::vector<std::string>& packets, size_t from);
  // The cap for packets (trailer: with the reserve); 0: none.
  uint64_t Limit(bool trailer) const;
  // Moves the open container's record into batch_ if it fits under `limit`,
  // else drops it (full).
  void CloseContainer(uint64_t limit);

  ScopedFd fd_;
  const uint64_t max_size_bytes_;
  uint64_t bytes_written_ = 0;
  uint64_t packets_written_ = 0;
  uint64_t packets_dropped_ = 0;
  uint64_t packets_lost_ = 0;
  uint64_t bytes_lost_ = 0;
  bool full_ = false;
  int write_errno_ = 0;  // The first write error; 0 while none.
  // A partial record stayed at the end of the file: its bytes, and why it
  // could not be cut off (errno of lseek/ftruncate; e.g. ESPIPE on a pipe).
  uint64_t partial_bytes_left_ = 0;
  int cut_errno_ = 0;
  std::string batch_;
  // Each record in batch_: its end offset, the packets it holds (a
  // container's several) and their record bytes before compression.
  struct Span {
    size_t end;
    uint64_t packets;
    uint64_t raw_bytes;
  };
  std::vector<Span> spans_;
  const TraceCompression compression_;
  std::unique_ptr<PacketCompressor> compressor_;  // Compressed files only.
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_TRACE_FILE_WRITER_H_
