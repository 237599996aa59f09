// What `sluice record` does about its output file when the session ends on a
// fault, and the one line it prints about it.
//
// Faults, and who leaves the file valid:
//   - The disk fills (ENOSPC; any write error). The service's TraceFileWriter
//     cuts the file back to its last whole packet and stops the session; its
//     message ("trace file: no space left on device after N bytes ...",
//     service/trace_file_writer.h) comes back as the session's error, here
//     or from sluiced over the socket.
//   - sluiced dies (--daemon). It may die in the middle of a write(2) and
//     leave part of a packet at the end of the file. The recorder still
//     holds the file's fd: once the socket says sluiced is gone (the service
//     writes on the thread that owns the socket, so no write of it is still
//     running), CutToLastWholePacket removes that part.
// Either way the file is a valid trace up to its last byte, and the line says
// how many bytes and packets it holds and what was lost.
#ifndef SLUICE_USER_CMD_RECORD_FAULT_H_
#define SLUICE_USER_CMD_RECORD_FAULT_H_

#include <cstdint>
#include <string>

#include "shm/base/status.h"
#include "user/trace/trace_file_reader.h"

namespace sluice {

// The output file after a fault, as CutToLastWholePacket left it.
struct RecordFileState {
  Status checked;               // Not ok: the file could not be read or is not a trace.
  TraceFileSummary summary;     // After the cut.
  uint64_t cut_bytes = 0;       // Bytes of a partial packet removed from the end.
};

// Reads the trace file open (for writing) as `fd` and cuts a partial packet
// off its end, so that it is a valid trace up to its last byte. Touches
// nothing if the file does not parse as a trace up to that partial packet.
RecordFileState CutToLastWholePacket(int fd);

// The line `sluice record` prints (without the "sluice record: " prefix)
// when the session ended on `error`. `service_gone`: the connection to
// sluiced was lost (ConsumerIpcClient::connection_lost()).
std::string DescribeSessionFault(const std::string& path, const std::string& error,
                                 bool service_gone, const RecordFileState& file);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_RECORD_FAULT_H_
