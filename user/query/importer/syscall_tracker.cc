#include "user/query/importer/syscall_tracker.h"

#include <string>

namespace sluice {

struct SyscallName {
  int id;
  const char* name;
};

namespace {
#include "user/query/importer/syscall_names.inc"
}  // namespace

SyscallTracker::SyscallTracker(TraceStorage* storage, ProcessTracker* processes, TrackTracker* tracks,
                               SliceTracker* slices)
    : storage_(storage), processes_(processes), tracks_(tracks), slices_(slices) {
  StringPool& s = storage->strings;
  sys_write_ = s.Intern("sys_write");
  sys_rt_sigreturn_ = s.Intern("sys_rt_sigreturn");
  ret_key_ = s.Intern("ret");
  names_.assign(kMaxSyscalls, kNullStringId);
}

void SyscallTracker::SetArchitecture(std::string_view machine) {
  if (machine == "x86_64") {
    table_ = kX86_64SyscallNames;
    table_size_ = std::size(kX86_64SyscallNames);
  } else if (machine == "aarch64") {
    table_ = kAarch64SyscallNames;
    table_size_ = std::size(kAarch64SyscallNames);
  } else {
    table_ = nullptr;
    table_size_ = 0;
  }
  names_.assign(kMaxSyscalls, kNullStringId);
}

StringId SyscallTracker::Name(int64_t id) {
  StringId& name = names_[static_cast<size_t>(id)];
  if (name != kNullStringId) return name;
  std::string text = "sys_" + std::to_string(id);
  for (size_t i = 0; i < table_size_; ++i) {
    if (table_[i].id == id) {
      text = table_[i].name;
      break;
    }
  }
  name = storage_->strings.Intern(text);
  return name;
}

void SyscallTracker::OnEnter(int64_t ts, int64_t tid, int64_t id, const std::vector<uint64_t>& args) {
  if (id < 0 || id >= kMaxSyscalls) return;
  const uint32_t utid = processes_->GetOrCreateThread(tid);
  const uint32_t track = tracks_->ThreadTrack(utid);
  const StringId name = Name(id);
  std::vector<Arg> slice_args;
  for (size_t i = 0; i < args.size(); ++i) {
    while (arg_keys_.size() <= i) arg_keys_.push_back(storage_->strings.Intern("args[" + std::to_string(arg_keys_.size()) + "]"));
    slice_args.push_back({arg_keys_[i], ArgType::kUint, static_cast<int64_t>(args[i]), 0});
  }
  if (name == sys_rt_sigreturn_) {
    slices_->Instant(ts, track, name, std::move(slice_args));
    return;
  }
  slices_->Begin(ts, track, name, std::move(slice_args));
  if (name == sys_write_) {
    if (utid >= in_sys_write_.size()) in_sys_write_.resize(utid + 1, false);
    in_sys_write_[utid] = true;
  }
}

void SyscallTracker::OnExit(int64_t ts, int64_t tid, int64_t id, bool has_ret, int64_t ret) {
  if (id < 0 || id >= kMaxSyscalls) return;
  const uint32_t utid = processes_->GetOrCreateThread(tid);
  const StringId name = Name(id);
  if (name == sys_write_) {
    if (utid >= in_sys_write_.size() || !in_sys_write_[utid]) return;
    in_sys_write_[utid] = false;
  }
  const uint32_t track = tracks_->ThreadTrack(utid);
  std::vector<Arg> end_args;
  if (has_ret) end_args.push_back({ret_key_, ArgType::kInt, ret, 0});
  slices_->EndNamed(ts, track, name, std::move(end_args));
}

void SyscallTracker::OnPrint(int64_t ts, int64_t tid) {
  const uint32_t utid = processes_->GetOrCreateThread(tid);
  if (utid >= in_sys_write_.size() || !in_sys_write_[utid]) return;
  in_sys_write_[utid] = false;
  if (slices_->EndNamed(ts, tracks_->ThreadTrack(utid), sys_write_)) truncated_sys_write_++;
}

}  // namespace sluice
