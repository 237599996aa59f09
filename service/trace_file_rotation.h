// TraceFileRotation: the files of a session that cuts its trace into
// several (`sluice record --rotate`, SessionOptions.rotation), each a whole
// trace that loads alone.
//
// The files live in one directory, which the consumer opened and handed to
// the service (an O_DIRECTORY fd): the service creates every file with
// openat() in it, so a service running as another user (sluiced) writes only
// where the consumer pointed, never by a path it resolves itself. Names:
//
//   STEM.000001EXT.recording   the file being written
//   STEM.000001EXT             renamed so once finished (trailer written)
//
// so a reader (an --on-rotate hook, a fleet collector, `ls *.pftrace`) sees
// only finished files, in order by name. The sequence number goes on from the
// highest one already in the directory, so a second recording with the same
// -o adds files after the first's rather than failing on the names.
//
// --keep N: once a file is finished, the oldest finished files of this
// session beyond the newest N are deleted (only files this session made).
//
// Not thread-safe: the service uses it on its own thread, under its mutex.
#ifndef SLUICE_SERVICE_TRACE_FILE_ROTATION_H_
#define SLUICE_SERVICE_TRACE_FILE_ROTATION_H_

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <string>

#include "shm/base/scoped_fd.h"
#include "shm/base/status.h"

namespace sluice {

struct FileRotationOptions {
  uint64_t max_bytes = 0;   // Cut once a file holds this much; 0: no size limit.
  uint32_t max_ms = 0;      // Cut once a file spans this long; 0: no time limit.
  uint32_t keep = 0;        // Finished files kept; 0: all.
  std::string stem;         // "host" of -o dir/host.pftrace
  std::string extension;    // ".pftrace"; may be empty.
  bool enabled() const { return max_bytes != 0 || max_ms != 0; }
};

// Suffix of a file still being written.
inline constexpr char kRotatingFileSuffix[] = ".recording";

class TraceFileRotation {
 public:
  // `directory`: an fd of the directory (O_DIRECTORY), owned from here on.
  // `owner_uid`/`owner_gid`: the files are given to them when the service
  // runs as root (-1: left as created).
  static StatusOr<TraceFileRotation> Create(ScopedFd directory, FileRotationOptions options,
                                             uid_t owner_uid, gid_t owner_gid);

  // Creates the next file under its .recording name (*name: that name,
  // relative to the directory) and returns its fd.
  StatusOr<ScopedFd> OpenNext(std::string* name);
  // Renames a file OpenNext made to its finished name, then deletes the
  // oldest finished files beyond --keep. Returns the finished name; errors
  // name the file and the cause.
  StatusOr<std::string> Finish(const std::string& recording_name);
  // Deletes a file OpenNext made that will hold nothing (the session failed
  // to start).
  void Abandon(const std::string& recording_name);

  const FileRotationOptions& options() const { return options_; }
  uint64_t files_finished() const { return files_finished_; }
  uint64_t files_deleted() const { return files_deleted_; }
  // The last --keep deletion that failed ("" none).
  const std::string& keep_error() const { return keep_error_; }

  // The finished name of file number `index`.
  std::string FinishedName(uint64_t index) const;

 private:
  TraceFileRotation(ScopedFd directory, FileRotationOptions options, uid_t uid, gid_t gid);
  uint64_t HighestIndexInDirectory() const;
  void DeleteBeyondKeep();

  ScopedFd directory_;
  FileRotationOptions options_;
  uid_t owner_uid_;
  gid_t owner_gid_;
  uint64_t next_index_ = 1;
  std::deque<std::string> finished_;  // Oldest first, this session's only.
  uint64_t files_finished_ = 0;
  uint64_t files_deleted_ = 0;
  std::string keep_error_;
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_TRACE_FILE_ROTATION_H_
