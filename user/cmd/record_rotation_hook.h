// RotationHook: `sluice record --on-rotate CMD`, run once for each file a
// rotating session finished, as `sh -c 'CMD "$@"' sh PATH`: the path is the
// command's last argument (and $SLUICE_TRACE_FILE), so
//
//   --on-rotate 'sluice export --clickhouse http://db:8123/'
//   --on-rotate 'gzip -k'       --on-rotate 'aws s3 cp "$SLUICE_TRACE_FILE" s3://bucket/'
//
// all work. Commands run one at a time, in the order the files finished, on
// a thread of their own: an upload as slow as the recording does not hold
// the recorder up (the queue grows instead), and two never race each other
// on the same fleet store. A command that fails (exit status, signal, not
// found) is reported in one line on stderr; the recording goes on.
#ifndef SLUICE_USER_CMD_RECORD_ROTATION_HOOK_H_
#define SLUICE_USER_CMD_RECORD_ROTATION_HOOK_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace sluice {

class RotationHook {
 public:
  explicit RotationHook(std::string command);
  // Runs what is queued, then returns (Finish).
  ~RotationHook();
  RotationHook(const RotationHook&) = delete;
  RotationHook& operator=(const RotationHook&) = delete;

  // Queues the command for `path`.
  void Run(const std::string& path);
  // Waits until every queued command has run.
  void Finish();

  uint64_t runs() const;
  uint64_t failures() const;

  // Runs `command` for `path` now, in this thread. "" if it succeeded, else
  // what went wrong ("exit status 3", "killed by signal 9").
  static std::string RunOnce(const std::string& command, const std::string& path);

 private:
  void Worker();

  const std::string command_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  bool finishing_ = false;
  bool busy_ = false;
  uint64_t runs_ = 0;
  uint64_t failures_ = 0;
  std::thread worker_;
};

}  // namespace sluice

#endif  // SLUICE_USER_CMD_RECORD_ROTATION_HOOK_H_
