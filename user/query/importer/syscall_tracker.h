// SyscallTracker: raw_syscalls sys_enter / sys_exit as slices on the
// thread's track, as Perfetto's trace processor makes them:
//
//   - The name is the call's, "sys_read", from the table of the trace's
//     architecture (SystemInfo's utsname.machine: x86_64 or aarch64;
//     syscall_names.inc); an id the table lacks, or any id when the
//     architecture is another or unknown, is "sys_<id>". Ids of 550 and up
//     are ignored, as upstream.
//   - An enter begins a slice with args args[0].. (the call's arguments,
//     when the recorder wrote them); sys_rt_sigreturn, which never returns,
//     is an instant.
//   - An exit ends the innermost open slice of its name, adding arg ret; an
//     exit without one changes nothing (the thread's track is made all the
//     same, as upstream).
//   - sys_write: an exit with no write open on the thread is ignored before
//     anything else; a print event (atrace) on a thread inside a write ends
//     the write there (truncated_sys_write_duration), so that the atrace
//     slice the write carries is not nested inside it.
#ifndef SLUICE_USER_QUERY_IMPORTER_SYSCALL_TRACKER_H_
#define SLUICE_USER_QUERY_IMPORTER_SYSCALL_TRACKER_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "user/query/importer/process_tracker.h"
#include "user/query/importer/slice_tracker.h"
#include "user/query/importer/track_tracker.h"
#include "user/query/storage/trace_storage.h"

namespace sluice {

class SyscallTracker {
 public:
  static constexpr int64_t kMaxSyscalls = 550;

  SyscallTracker(TraceStorage* storage, ProcessTracker* processes, TrackTracker* tracks, SliceTracker* slices);

  // utsname.machine: "x86_64", "aarch64"; anything else names calls by number.
  void SetArchitecture(std::string_view machine);
  void OnEnter(int64_t ts, int64_t tid, int64_t id, const std::vector<uint64_t>& args);
  void OnExit(int64_t ts, int64_t tid, int64_t id, bool has_ret, int64_t ret);
  // A print event of `tid` at `ts`.
  void OnPrint(int64_t ts, int64_t tid);

  int64_t truncated_sys_write_duration() const { return truncated_sys_write_; }

 private:
  StringId Name(int64_t id);

  TraceStorage* storage_;
  ProcessTracker* processes_;
  TrackTracker* tracks_;
  SliceTracker* slices_;
  // By id, for the current architecture; kNullStringId: not interned yet.
  std::vector<StringId> names_;
  const struct SyscallName* table_ = nullptr;
  size_t table_size_ = 0;
  StringId sys_write_ = kNullStringId, sys_rt_sigreturn_ = kNullStringId, ret_key_ = kNullStringId;
  std::vector<StringId> arg_keys_;  // "args[0]", ...
  std::vector<bool> in_sys_write_;  // By utid.
  int64_t truncated_sys_write_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_SYSCALL_TRACKER_H_
