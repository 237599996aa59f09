#include "user/query/atrace_tracker.h"

#include <vector>

namespace sluice {

AtraceTracker::AtraceTracker(TraceStorage* storage, ProcessTracker* processes, TrackTracker* tracks,
                             SliceTracker* slices)
    : storage_(storage), processes_(processes), tracks_(tracks), slices_(slices) {
  StringPool& s = storage->strings;
  async_type_ = s.Intern("atrace_async_slice");
  async_for_track_type_ = s.Intern("atrace_async_slice_for_track");
  cookie_key_ = s.Intern("cookie");
  utid_key_ = s.Intern("utid");
  end_utid_key_ = s.Intern("end_utid");
}

void AtraceTracker::OnPrint(int64_t ts, int64_t tid, std::string_view buf) {
  AtraceLine line;
  switch (ParseAtraceLine(buf, &line)) {
    case AtraceParse::kOk: OnLine(ts, tid, line); break;
    case AtraceParse::kNotAtrace: parse_failures_++; break;
    case AtraceParse::kIgnored: break;
  }
}

// tgid 0 (kernel atrace points from interrupts) names no process.
uint32_t AtraceTracker::WriterUtid(int64_t tid, uint32_t tgid) {
  return tgid == 0 ? processes_->GetOrCreateThread(tid) : processes_->UpdateThread(tid, tgid);
}

void AtraceTracker::OnLine(int64_t ts, int64_t tid, const AtraceLine& line) {
  StringPool& s = storage_->strings;
  switch (line.phase) {
    case 'B': {
      StringId name = s.Intern(line.name);
      slices_->Begin(ts, tracks_->ThreadTrack(WriterUtid(tid, line.tgid)), name);
      break;
    }
    case 'E': {
      uint32_t utid;
      if (line.tgid == 0) {
        // No tgid (older writers): a thread never seen has nothing open.
        std::optional<uint32_t> known = processes_->GetThreadOrNull(tid);
        if (!known) break;
        utid = *known;
      } else {
        utid = processes_->UpdateThread(tid, line.tgid);
      }
      slices_->End(ts, tracks_->ThreadTrack(utid));
      break;
    }
    case 'I': {
      StringId name = s.Intern(line.name);
      slices_->Instant(ts, tracks_->ThreadTrack(WriterUtid(tid, line.tgid)), name);
      break;
    }
    case 'S':
    case 'F': {
      StringId name = s.Intern(line.name);
      uint32_t upid = processes_->GetOrCreateProcess(line.tgid);
      if (line.phase == 'S') {
        uint32_t track = tracks_->AsyncBegin(async_type_, upid, name, line.value, TrackTracker::Nesting::kLegacyUnnestable);
        slices_->BeginLegacyUnnestable(ts, track, name, {{cookie_key_, ArgType::kInt, line.value, 0}});
      } else {
        slices_->End(ts, tracks_->AsyncEnd(async_type_, upid, name, line.value));
      }
      break;
    }
    case 'N':
    case 'G':
    case 'H': {
      StringId track_name = s.Intern(line.track);
      uint32_t upid = processes_->GetOrCreateProcess(line.tgid);
      if (line.phase == 'N') {
        uint32_t track = tracks_->AsyncInstant(async_for_track_type_, upid, track_name, ts);
        uint32_t utid = processes_->GetOrCreateThread(tid);
        slices_->Instant(ts, track, s.Intern(line.name), {{utid_key_, ArgType::kUint, utid, 0}});
      } else if (line.phase == 'G') {
        uint32_t track = tracks_->AsyncBegin(async_for_track_type_, upid, track_name, line.value,
                                             TrackTracker::Nesting::kNestable);
        uint32_t utid = processes_->GetOrCreateThread(tid);
        slices_->Begin(ts, track, s.Intern(line.name), {{utid_key_, ArgType::kUint, utid, 0}});
      } else {
        uint32_t track = tracks_->AsyncEnd(async_for_track_type_, upid, track_name, line.value);
        uint32_t utid = processes_->GetOrCreateThread(tid);
        slices_->End(ts, track, {{end_utid_key_, ArgType::kUint, utid, 0}});
      }
      break;
    }
    case 'C': {
      uint32_t upid = processes_->GetOrCreateProcess(line.tgid);
      std::optional<uint32_t> writer = processes_->GetThreadOrNull(tid);
      uint32_t track = tracks_->ProcessCounterTrack(upid, s.Intern(line.name));
      std::vector<Arg> args;
      if (writer) args.push_back({utid_key_, ArgType::kUint, *writer, 0});
      CounterTable& counters = storage_->counter;
      counters.ts.push_back(ts);
      counters.track_id.push_back(track);
      counters.value.push_back(static_cast<double>(line.value));
      counters.arg_set_id.push_back(storage_->args.Add(&args));
      break;
    }
    default: break;
  }
}

}  // namespace sluice
