#include "user/query/importer/atrace_tracker.h"

#include <charconv>
#include <optional>
#include <string_view>
#include <utility>
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
  lmk_type_ = s.Intern("android_lmk");
  lmk_track_ = s.Intern("LMK");
  lmk_name_ = s.Intern("mem.lmk");
  oom_type_ = s.Intern("oom_score_adj");
  screen_state_type_ = s.Intern("screen_state");
  screen_state_ = s.Intern("ScreenState");
  battery_type_ = s.Intern("battery_stats");
  counter_key_ = s.Intern("counter_key");
  device_state_type_ = s.Intern("android_device_state");
  device_state_ = s.Intern("DeviceStateChanged");
}

void AtraceTracker::LmkInstant(int64_t ts, int64_t killed_pid) {
  uint32_t upid = processes_->GetOrCreateProcess(killed_pid);
  slices_->Instant(ts, tracks_->SingletonTrack(lmk_type_, lmk_track_, false, upid), lmk_name_);
}

void AtraceTracker::AddCounterValue(int64_t ts, uint32_t track, double value, std::vector<Arg> args) {
  CounterTable& counters = storage_->counter;
  counters.ts.push_back(ts);
  counters.track_id.push_back(track);
  counters.value.push_back(value);
  counters.arg_set_id.push_back(storage_->args.Add(&args));
}

namespace {

// "lmk,pid,reason,oom_score_adj,...": the kill of pid (Android's lmkd).
std::optional<std::pair<uint32_t, int32_t>> ParseLmkSliceName(std::string_view name) {
  if (!name.starts_with("lmk,")) return std::nullopt;
  std::vector<std::string_view> fields;
  for (size_t pos = 0;;) {
    size_t comma = name.find(',', pos);
    fields.push_back(name.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (fields.size() < 4) return std::nullopt;
  auto number = [](std::string_view field, auto* out) {
    auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), *out);
    return ec == std::errc() && end == field.data() + field.size();
  };
  uint32_t pid = 0;
  int32_t adj = 0;
  if (!number(fields[1], &pid) || !number(fields[3], &adj)) return std::nullopt;
  return std::make_pair(pid, adj);
}

}  // namespace

void AtraceTracker::OnPrint(int64_t ts, int64_t tid, std::string_view buf) {
  AtraceLine line;
  switch (ParseAtraceLine(buf, &line)) {
    case AtraceParse::kOk: OnLine(ts, tid, line); break;
    case AtraceParse::kNotAtrace: parse_failures_++; break;
    case AtraceParse::kIgnored: break;
  }
}

void AtraceTracker::OnKernelMark(int64_t ts, int64_t tid, char phase, bool begin, std::string_view name,
                                 uint32_t tgid, int64_t value) {
  AtraceLine line;
  if (phase == 0) {
    line.phase = begin ? 'B' : 'E';
  } else if (phase == 'B' || phase == 'E' || phase == 'C' || phase == 'I') {
    line.phase = phase;
  } else {
    parse_failures_++;
    return;
  }
  line.tgid = tgid;
  line.name = name;
  line.value = value;
  OnLine(ts, tid, line);
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
      if (auto lmk = ParseLmkSliceName(line.name)) {
        uint32_t upid = processes_->GetOrCreateProcess(lmk->first);
        AddCounterValue(ts, tracks_->SingletonTrack(oom_type_, oom_type_, true, upid), lmk->second, {});
        LmkInstant(ts, lmk->first);
      }
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
      if (line.phase == 'N' && line.track == "DeviceStateChanged") {
        uint32_t track = tracks_->SingletonTrack(device_state_type_, device_state_, false);
        slices_->Instant(ts, track, s.Intern(line.name));
        break;
      }
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
    case 'C':
      OnCounter(ts, tid, line);
      break;
    default: break;
  }
}

void AtraceTracker::OnCounter(int64_t ts, int64_t tid, const AtraceLine& line) {
  StringPool& s = storage_->strings;
  auto value = static_cast<double>(line.value);
  if (line.name == "kill_one_process") {
    // lmkd's kills: the value is the killed pid, reset to 0 after.
    if (line.value != 0) LmkInstant(ts, line.value);
  } else if (line.name == "ScreenState") {
    AddCounterValue(ts, tracks_->SingletonTrack(screen_state_type_, screen_state_, true), value, {});
    return;
  } else if (line.name.starts_with("battery_stats.")) {
    StringId name = s.Intern(line.name);
    AddCounterValue(ts, tracks_->SingletonTrack(battery_type_, name, true, kNullU32, counter_key_, name), value, {});
    return;
  }
  uint32_t upid = processes_->GetOrCreateProcess(line.tgid);
  std::optional<uint32_t> writer = processes_->GetThreadOrNull(tid);
  uint32_t track = tracks_->ProcessCounterTrack(upid, s.Intern(line.name));
  std::vector<Arg> args;
  if (writer) args.push_back({utid_key_, ArgType::kUint, *writer, 0});
  AddCounterValue(ts, track, value, std::move(args));
}

}  // namespace sluice
