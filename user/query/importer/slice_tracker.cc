#include "user/query/importer/slice_tracker.h"

#include <algorithm>
#include <utility>

namespace sluice {

uint32_t SliceTracker::Begin(int64_t ts, uint32_t track, StringId name, std::vector<Arg> args, StringId category) {
  TrackStack& state = tracks_[track];
  TruncateInsideEnded(state);
  CloseEnded(state, ts, kOpen);
  return Start(ts, kOpen, track, state, name, std::move(args), category);
}

void SliceTracker::BeginLegacyUnnestable(int64_t ts, uint32_t track, StringId name, std::vector<Arg> args) {
  TrackStack& state = tracks_[track];
  state.legacy_unnestable = true;
  state.legacy_begin_count++;
  state.legacy_last_begin_ts = ts;
  if (!state.stack.empty()) return;  // Counted only: one slice at a time.
  CloseEnded(state, ts, kOpen);
  Start(ts, kOpen, track, state, name, std::move(args));
}

uint32_t SliceTracker::Complete(int64_t ts, int64_t dur, uint32_t track, StringId name, std::vector<Arg> args,
                                StringId category) {
  TrackStack& state = tracks_[track];
  TruncateInsideEnded(state);
  CloseEnded(state, ts, dur);
  return Start(ts, dur, track, state, name, std::move(args), category);
}

uint32_t SliceTracker::Start(int64_t ts, int64_t dur, uint32_t track, TrackStack& state, StringId name,
                             std::vector<Arg> args, StringId category) {
  size_t depth = state.stack.size();
  if (depth >= kMaxDepth) {
    max_depth_exceeded_++;
    return kNullU32;
  }
  SliceTable& slices = storage_->slice;
  auto row = static_cast<uint32_t>(slices.size());
  slices.ts.push_back(ts);
  slices.dur.push_back(dur);
  slices.track_id.push_back(track);
  slices.category.push_back(category);
  slices.name.push_back(name);
  slices.depth.push_back(static_cast<uint32_t>(depth));
  slices.parent_id.push_back(depth == 0 ? kNullU32 : state.stack.back().row);
  slices.arg_set_id.push_back(kNoArgSet);
  state.stack.push_back({row, ts, dur, std::move(args)});
  return row;
}

uint32_t SliceTracker::End(int64_t ts, uint32_t track, std::vector<Arg> end_args, EndArgs policy) {
  auto it = tracks_.find(track);
  if (it == tracks_.end()) return kNullU32;
  TrackStack& state = it->second;
  TruncateInsideEnded(state);
  CloseEnded(state, ts, kOpen);
  // The innermost slice still open.
  size_t index = state.stack.size();
  while (index > 0 && state.stack[index - 1].dur != kOpen) --index;
  if (index == 0) return kNullU32;
  return CloseAt(state, index - 1, ts, std::move(end_args), policy);
}

template <typename Matches>
uint32_t SliceTracker::EndInnermost(int64_t ts, uint32_t track, Matches matches, std::vector<Arg> end_args,
                                    EndArgs policy) {
  auto it = tracks_.find(track);
  if (it == tracks_.end()) return kNullU32;
  TrackStack& state = it->second;
  TruncateInsideEnded(state);
  CloseEnded(state, ts, kOpen);
  size_t index = state.stack.size();
  bool above = false;  // A slice still open inside the one ended.
  while (index > 0 && !(state.stack[index - 1].dur == kOpen && matches(state.stack[index - 1].row))) {
    if (state.stack[index - 1].dur == kOpen) above = true;
    --index;
  }
  if (index == 0) return kNullU32;
  if (above) misplaced_end_events_++;
  return CloseAt(state, index - 1, ts, std::move(end_args), policy);
}

bool SliceTracker::EndNamed(int64_t ts, uint32_t track, StringId name, std::vector<Arg> end_args, EndArgs policy) {
  const SliceTable& slices = storage_->slice;
  return EndInnermost(
             ts, track, [&](uint32_t row) { return slices.name[row] == name; }, std::move(end_args), policy) !=
         kNullU32;
}

uint32_t SliceTracker::EndMatching(int64_t ts, uint32_t track, StringId category, StringId name,
                                   std::vector<Arg> end_args, EndArgs policy) {
  const SliceTable& slices = storage_->slice;
  auto matches = [&](uint32_t row) {
    if (category != kNullStringId && slices.category[row] != category) return false;
    return name == kNullStringId || slices.name[row] == kNullStringId || slices.name[row] == name;
  };
  return EndInnermost(ts, track, matches, std::move(end_args), policy);
}

uint32_t SliceTracker::CloseAt(TrackStack& state, size_t index, int64_t ts, std::vector<Arg> end_args,
                               EndArgs policy) {
  OpenSlice& slice = state.stack[index];
  const uint32_t row = slice.row;
  slice.dur = ts - slice.ts;
  storage_->slice.dur[slice.row] = slice.dur;
  for (Arg& arg : end_args) {
    auto same = std::find_if(slice.args.begin(), slice.args.end(), [&](const Arg& a) { return a.key == arg.key; });
    if (same == slice.args.end()) slice.args.push_back(arg);
    else if (policy == EndArgs::kReplace) *same = arg;
  }
  if (state.legacy_unnestable) {
    StringPool& s = storage_->strings;
    slice.args.push_back({s.Intern("legacy_unnestable_begin_count"), ArgType::kInt, state.legacy_begin_count, 0});
    slice.args.push_back({s.Intern("legacy_unnestable_last_begin_ts"), ArgType::kInt, state.legacy_last_begin_ts, 0});
  }
  if (index + 1 == state.stack.size()) Pop(state);
  return row;
}

void SliceTracker::TruncateInsideEnded(TrackStack& state) {
  int64_t end = kOpen;  // The end of the outermost ended slice so far.
  for (OpenSlice& slice : state.stack) {
    if (slice.dur != kOpen) {
      if (end == kOpen) end = slice.ts + slice.dur;
    } else if (end != kOpen) {
      slice.dur = std::max<int64_t>(end - slice.ts, 0);
      storage_->slice.dur[slice.row] = slice.dur;
    }
  }
}

void SliceTracker::CloseEnded(TrackStack& state, int64_t ts, int64_t dur) {
  auto& stack = state.stack;
  for (size_t i = stack.size(); i > 0; --i) {
    const OpenSlice& slice = stack[i - 1];
    if (slice.dur == kOpen) continue;
    int64_t end = slice.ts + slice.dur;
    // Intervals are closed on the left and open on the right; instants only
    // stack on instants.
    bool ended = end < ts || (end == ts && !(slice.dur == 0 && dur == 0));
    if (ended && i == stack.size()) Pop(state);
  }
}

void SliceTracker::Pop(TrackStack& state) {
  OpenSlice& slice = state.stack.back();
  if (!slice.args.empty()) storage_->slice.arg_set_id[slice.row] = storage_->args.Add(&slice.args);
  state.stack.pop_back();
}

void SliceTracker::Finish() {
  for (auto& [track, state] : tracks_) {
    while (!state.stack.empty()) Pop(state);
  }
}

}  // namespace sluice
