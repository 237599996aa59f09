// Where `sluice record` writes its trace, so that no run ever damages a file
// that was there before it:
//
//   -o trace.pftrace  the trace goes to trace.pftrace.recording-XXXXXX, a
//                     new file beside it (same directory, same file system),
//                     renamed over trace.pftrace when the recording ends;
//   -o -              the trace goes to a temporary file in $TMPDIR (/tmp),
//                     copied to standard output when the recording ends and
//                     then removed (the summary and status go to stderr).
//
// A detached session (--detach) leaves its temporary file to sluiced, which
// writes it; the run that attaches (--attach) adopts it and puts it in place
// as if it had created it.
//
// A run that fails before it recorded anything removes its temporary file
// and leaves the path as it was. A run that recorded and then failed (the
// disk filled, sluiced died) keeps what it recorded: renamed into place when
// nothing was at the path, else left under its temporary name, which the
// error line gives. A run that is killed leaves the temporary file, a valid
// trace up to its last whole packet while streaming; the status line names
// it so that it can be found.
#ifndef SLUICE_USER_CMD_RECORD_OUTPUT_H_
#define SLUICE_USER_CMD_RECORD_OUTPUT_H_

#include <memory>
#include <string>

#include "service/ipc/ipc_socket.h"
#include "service/service_endpoints.h"
#include "shm/base/status.h"

namespace sluice {

class RecordOutput {
 public:
  // Creates the temporary file for `path` ("-": standard output). Fails,
  // touching nothing, when the directory is missing or not writable, or
  // `path` is a directory.
  static StatusOr<std::unique_ptr<RecordOutput>> Create(const std::string& path);
  // The temporary file `temp_path` a --detach run created for `path`
  // (sluiced writes it): opened to check and put in place like one this run
  // created, but never removed by this object. Fails when it is gone.
  static StatusOr<std::unique_ptr<RecordOutput>> Adopt(const std::string& path, const std::string& temp_path);
  // Removes the temporary file unless Commit() or KeepPartial() ran (or it
  // was adopted, or left to a detached session).
  ~RecordOutput();
  RecordOutput(const RecordOutput&) = delete;
  RecordOutput& operator=(const RecordOutput&) = delete;

  int fd() const { return fd_.get(); }
  const std::string& temp_path() const { return temp_path_; }
  // What the user gave: a path or "-".
  const std::string& path() const { return path_; }
  bool to_stdout() const { return path_ == "-"; }
  // How messages name the trace: the path, or "standard output".
  std::string display_name() const { return to_stdout() ? "standard output" : path_; }

  // Closes the file; it stays at temp_path() for Commit() or KeepPartial().
  // (--compress rewrites it by path, so it is closed first.)
  void Close() { fd_.reset(); }

  // The recording ended: puts the trace in place (rename over path(), or
  // copy to standard output and remove the temporary file).
  Status Commit();

  // The session was detached: the temporary file stays, unsettled, for
  // sluiced to write and for the run that attaches to put in place.
  void LeaveToDetachedSession() {
    Close();
    settled_ = true;
  }

  // The recording ended on a fault after it wrote something: keeps that.
  // Renamed to path() when nothing is there (and not stdout), else left at
  // temp_path(). Returns where the data is now.
  std::string KeepPartial();

 private:
  RecordOutput(std::string path, std::string temp_path, ScopedFd fd)
      : path_(std::move(path)), temp_path_(std::move(temp_path)), fd_(std::move(fd)) {}
  Status CopyToStdout();

  const std::string path_;
  const std::string temp_path_;
  ScopedFd fd_;
  bool settled_ = false;  // Committed or kept: the destructor leaves the file.
  bool adopted_ = false;  // Adopt(): never removed by this object.
};

// An in-memory session's end: its buffers, read in slices into the file at
// `fd`, with max_file_size_bytes and the config's compression as when
// streaming (the last compressed container is flushed before it returns).
// The writer keeps the file a valid trace up to its last whole packet on a
// write error and says so.
Status ReadBuffersIntoFile(ConsumerEndpoint* consumer, int fd, uint64_t max_file_size_bytes,
                           TraceCompression compression = {});

}  // namespace sluice

#endif  // SLUICE_USER_CMD_RECORD_OUTPUT_H_
