#include "user/cmd/record_fault.h"

#include <unistd.h>

#include <cerrno>
#include <string_view>

#include "service/trace_file_writer.h"
#include "shm/base/errno_message.h"
#include "shm/base/string_util.h"

namespace sluice {

RecordFileState CutToLastWholePacket(int fd) {
  RecordFileState state;
  // The fd is write-only; /proc/self/fd/N opens the same file for reading,
  // wherever its name points now.
  state.checked = ReadTraceFile("/proc/self/fd/" + std::to_string(fd),
                                [](std::string_view) {}, &state.summary);
  if (!state.checked.ok() || !state.summary.truncated) return state;
  const uint64_t cut = state.summary.bytes - state.summary.valid_bytes;
  if (ftruncate(fd, static_cast<off_t>(state.summary.valid_bytes)) != 0) {
    state.checked = Status::Error(
        WithErrno("cannot cut the partial packet off its end (" + std::to_string(cut) + " bytes)",
                  errno));
    return state;
  }
  state.cut_bytes = cut;
  state.summary.bytes = state.summary.valid_bytes;
  state.summary.truncated = false;
  return state;
}

namespace {

// "<path> is valid up to its last whole packet: N bytes, M packets" and the
// cut, or why the file could not be checked.
std::string FileHolds(const std::string& path, const RecordFileState& file) {
  if (!file.checked.ok()) return path + ": " + file.checked.message();
  std::string s = path + " is valid up to its last whole packet: " +
                  CountOf(file.summary.bytes, "byte") + ", " +
                  CountOf(file.summary.packets, "packet");
  if (file.cut_bytes)
    s += " (the " + std::to_string(file.cut_bytes) + " bytes of a partial packet were cut off)";
  return s;
}

}  // namespace

std::string DescribeSessionFault(const std::string& path, const std::string& error,
                                 bool service_gone, const RecordFileState& file) {
  // The service's file writer said what the file holds and what it misses:
  // put the file's name in front.
  if (std::string_view(error).starts_with(kTraceFileErrorPrefix))
    return path + ": " + error.substr(kTraceFileErrorPrefix.size());
  if (service_gone) {
    return error + " during the session; " + FileHolds(path, file) +
           "; what sluiced had not written yet is lost; see its log (journalctl -u sluiced) "
           "and start it again";
  }
  return "the session ended on an error: " + error + "; " + FileHolds(path, file);
}

}  // namespace sluice
