#include "user/query/importer/track_tracker.h"

#include <string>
#include <vector>

namespace sluice {

TrackTracker::TrackTracker(TraceStorage* storage) : storage_(storage) {
  StringPool& s = storage->strings;
  thread_execution_ = s.Intern("thread_execution");
  atrace_counter_ = s.Intern("atrace_counter");
  utid_key_ = s.Intern("utid");
  upid_key_ = s.Intern("upid");
  name_key_ = s.Intern("name");
  cpu_key_ = s.Intern("cpu");
  compressor_idx_key_ = s.Intern("track_compressor_idx");
}

uint32_t TrackTracker::CpuTrack(StringId type, StringId name, uint32_t cpu, bool counter) {
  auto [it, inserted] = cpu_tracks_.try_emplace(uint64_t{type} << 32 | cpu, 0);
  if (inserted) {
    std::vector<Arg> dims = {{cpu_key_, ArgType::kInt, cpu, 0}};
    it->second = storage_->track.Add(name, type, counter, cpu, kNullU32, kNullU32, storage_->args.Add(&dims));
  }
  return it->second;
}

uint32_t TrackTracker::PerfCpuCounterTrack(uint32_t cpu) {
  auto [it, inserted] = perf_cpu_tracks_.try_emplace(cpu, 0);
  if (inserted) {
    StringPool& s = storage_->strings;
    const StringId name = s.Intern("cpu-clock");
    std::vector<Arg> dims = {{cpu_key_, ArgType::kInt, cpu, 0},
                             {s.Intern("perf_session_id"), ArgType::kInt, 0, 0},
                             {name_key_, ArgType::kString, name, 0}};
    it->second = storage_->track.Add(name, s.Intern("perf_cpu_counter"), /*counter=*/true, cpu, kNullU32, kNullU32,
                                     storage_->args.Add(&dims));
  }
  return it->second;
}

uint32_t TrackTracker::ThreadTrack(uint32_t utid) {
  auto [it, inserted] = thread_tracks_.try_emplace(utid, 0);
  if (inserted) {
    std::vector<Arg> dims = {{utid_key_, ArgType::kInt, utid, 0}};
    it->second = storage_->track.Add(kNullStringId, thread_execution_, /*counter=*/false, kNullU32, utid, kNullU32,
                                     storage_->args.Add(&dims));
  }
  return it->second;
}

uint32_t TrackTracker::ProcessCounterTrack(uint32_t upid, StringId name) {
  auto [it, inserted] = process_counter_tracks_.try_emplace({upid, name}, 0);
  if (inserted) {
    std::vector<Arg> dims = {{upid_key_, ArgType::kInt, upid, 0}, {name_key_, ArgType::kString, name, 0}};
    it->second = storage_->track.Add(name, atrace_counter_, /*counter=*/true, kNullU32, kNullU32, upid,
                                     storage_->args.Add(&dims));
  }
  return it->second;
}

uint32_t TrackTracker::SingletonTrack(StringId type, StringId name, bool counter, uint32_t upid, StringId key,
                                      StringId key_value) {
  auto [it, inserted] = singleton_tracks_.try_emplace({type, upid, key_value}, 0);
  if (inserted) {
    std::vector<Arg> dims;
    if (upid != kNullU32) dims.push_back({upid_key_, ArgType::kInt, upid, 0});
    if (key != kNullStringId) dims.push_back({key, ArgType::kString, key_value, 0});
    it->second = storage_->track.Add(name, type, counter, kNullU32, kNullU32, upid, storage_->args.Add(&dims));
  }
  return it->second;
}

uint32_t TrackTracker::IntDimensionTrack(StringId type, StringId name, bool counter, StringId key, int64_t value) {
  auto [it, inserted] = int_dimension_tracks_.try_emplace({type, key, value}, 0);
  if (inserted) {
    std::vector<Arg> dims = {{key, ArgType::kInt, value, 0}};
    it->second = storage_->track.Add(name, type, counter, kNullU32, kNullU32, kNullU32, storage_->args.Add(&dims));
  }
  return it->second;
}

uint32_t TrackTracker::DimensionsTrack(StringId type, StringId name, bool counter, std::vector<Arg> dims,
                                       StringId unit, uint32_t cpu) {
  const uint32_t set = storage_->args.Add(&dims);
  auto [it, inserted] = dimension_tracks_.try_emplace({type, set}, 0);
  if (inserted) {
    it->second = storage_->track.Add(name, type, counter, cpu, kNullU32, kNullU32, set);
    storage_->track.unit[it->second] = unit;
  }
  return it->second;
}

uint32_t TrackTracker::TrackEventTrack(StringId type, StringId name, bool counter, std::vector<Arg> dims,
                                       uint32_t utid, uint32_t upid, StringId unit,
                                       const std::function<uint32_t()>& source_args) {
  const uint32_t set = storage_->args.Add(&dims);
  auto [it, inserted] = track_event_tracks_.try_emplace({type, set}, 0);
  if (inserted) {
    it->second = storage_->track.Add(name, type, counter, kNullU32, utid, upid, set);
    storage_->track.unit[it->second] = unit;
    storage_->track.source_arg_set_id[it->second] = source_args();
  }
  return it->second;
}

TrackTracker::TrackSet& TrackTracker::MergedSet(StringId type, const std::vector<Arg>& dims) {
  // Keyed by the dims' bytes, not an arg set: a set's key is no row of
  // `args` (only its tracks' dims, with their index, are).
  std::string key(reinterpret_cast<const char*>(&type), sizeof type);
  for (const Arg& a : dims) {
    key.append(reinterpret_cast<const char*>(&a.key), sizeof a.key);
    key.push_back(static_cast<char>(a.type));
    key.append(reinterpret_cast<const char*>(&a.int_value), sizeof a.int_value);
    key.append(reinterpret_cast<const char*>(&a.real_value), sizeof a.real_value);
  }
  auto [it, inserted] = merged_sets_.try_emplace(std::move(key));
  if (inserted) it->second.group = next_group_++;
  return it->second;
}

uint32_t TrackTracker::MergedRow(TrackSet& set, uint32_t index, StringId type, StringId name,
                                 const std::vector<Arg>& dims, uint32_t utid, uint32_t upid,
                                 const std::function<uint32_t()>& source_args) {
  CompressedTrack& track = set.tracks[index];
  if (track.track_id == kNullU32) {
    std::vector<Arg> row_dims = dims;
    row_dims.push_back({compressor_idx_key_, ArgType::kInt, index, 0});
    track.track_id = storage_->track.Add(name, type, /*counter=*/false, kNullU32, utid, upid,
                                         storage_->args.Add(&row_dims), set.group);
    storage_->track.source_arg_set_id[track.track_id] = source_args();
  }
  return track.track_id;
}

uint32_t TrackTracker::MergedBegin(StringId type, StringId name, const std::vector<Arg>& dims, uint32_t utid,
                                   uint32_t upid, int64_t cookie, const std::function<uint32_t()>& source_args) {
  TrackSet& set = MergedSet(type, dims);
  uint32_t index = TrackForCookie(set, cookie);
  set.tracks[index].nest_count++;
  return MergedRow(set, index, type, name, dims, utid, upid, source_args);
}

uint32_t TrackTracker::MergedEnd(StringId type, StringId name, const std::vector<Arg>& dims, uint32_t utid,
                                 uint32_t upid, int64_t cookie, const std::function<uint32_t()>& source_args) {
  TrackSet& set = MergedSet(type, dims);
  uint32_t index = TrackForCookie(set, cookie);
  CompressedTrack& track = set.tracks[index];
  if (track.nest_count > 0) track.nest_count--;
  return MergedRow(set, index, type, name, dims, utid, upid, source_args);
}

uint32_t TrackTracker::ThreadTrackOfType(StringId type, StringId name, uint32_t utid, StringId key,
                                         StringId key_value, bool counter) {
  auto [it, inserted] = typed_thread_tracks_.try_emplace({type, utid, key_value}, 0);
  if (inserted) {
    std::vector<Arg> dims = {{utid_key_, ArgType::kInt, utid, 0}};
    if (key != kNullStringId) dims.push_back({key, ArgType::kString, key_value, 0});
    it->second = storage_->track.Add(name, type, counter, kNullU32, utid, kNullU32, storage_->args.Add(&dims));
  }
  return it->second;
}

TrackTracker::TrackSet& TrackTracker::SetOf(StringId type, uint32_t upid, StringId name) {
  auto [it, inserted] = async_sets_.try_emplace(SetKey{type, upid, name});
  if (inserted) it->second.group = next_group_++;
  return it->second;
}

uint32_t TrackTracker::TrackForCookie(TrackSet& set, int64_t cookie) {
  auto& tracks = set.tracks;
  for (uint32_t i = 0; i < tracks.size(); ++i)
    if (!tracks[i].instant && tracks[i].cookie == cookie) return i;
  for (uint32_t i = 0; i < tracks.size(); ++i) {
    if (!tracks[i].instant && tracks[i].nest_count == 0) {
      tracks[i].cookie = cookie;  // Adopted: later slices of the cookie come here too.
      return i;
    }
  }
  CompressedTrack track;
  track.cookie = cookie;
  tracks.push_back(track);
  return static_cast<uint32_t>(tracks.size() - 1);
}

uint32_t TrackTracker::TrackRow(TrackSet& set, uint32_t index, StringId type, uint32_t upid, StringId name) {
  CompressedTrack& track = set.tracks[index];
  if (track.track_id == kNullU32) {
    // A set of no process (suspend_resume) has only the index as dimension.
    std::vector<Arg> dims;
    if (upid != kNullU32) {
      dims.push_back({upid_key_, ArgType::kInt, upid, 0});
      dims.push_back({name_key_, ArgType::kString, name, 0});
    }
    dims.push_back({compressor_idx_key_, ArgType::kInt, index, 0});
    track.track_id = storage_->track.Add(name, type, /*counter=*/false, kNullU32, kNullU32, upid,
                                         storage_->args.Add(&dims), set.group);
  }
  return track.track_id;
}

uint32_t TrackTracker::AsyncBegin(StringId type, uint32_t upid, StringId name, int64_t cookie, Nesting nesting) {
  TrackSet& set = SetOf(type, upid, name);
  uint32_t index = TrackForCookie(set, cookie);
  CompressedTrack& track = set.tracks[index];
  track.nest_count = nesting == Nesting::kNestable ? track.nest_count + 1 : 1;
  return TrackRow(set, index, type, upid, name);
}

uint32_t TrackTracker::AsyncEnd(StringId type, uint32_t upid, StringId name, int64_t cookie) {
  TrackSet& set = SetOf(type, upid, name);
  uint32_t index = TrackForCookie(set, cookie);
  CompressedTrack& track = set.tracks[index];
  // An end whose begin came before the trace started finds nothing open.
  if (track.nest_count > 0) track.nest_count--;
  return TrackRow(set, index, type, upid, name);
}

uint32_t TrackTracker::AsyncInstant(StringId type, uint32_t upid, StringId name, int64_t ts) {
  TrackSet& set = SetOf(type, upid, name);
  auto& tracks = set.tracks;
  uint32_t index = 0;
  while (index < tracks.size() && !(tracks[index].instant && tracks[index].ts_end <= ts)) ++index;
  if (index == tracks.size()) {
    CompressedTrack track;
    track.instant = true;
    tracks.push_back(track);
  }
  tracks[index].ts_end = ts;  // An instant lasts 0 ns.
  return TrackRow(set, index, type, upid, name);
}

}  // namespace sluice
