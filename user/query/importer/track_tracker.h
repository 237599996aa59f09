// TrackTracker: the rows of the `track` table, interned by what they stand
// for, with Perfetto's types and dimension args:
//
//   cpu counter tracks     cpu_idle / cpu_frequency, per CPU
//   thread tracks          thread_execution, per utid: a thread's slices
//   process counters       atrace_counter, per (upid, name)
//   async process tracks   atrace_async_slice (S/F) and
//                          atrace_async_slice_for_track (N/G/H), per
//                          (upid, name), compressed as Perfetto does
//   global async tracks    suspend_resume ("Suspend/Resume Latency"), upid
//                          kNullU32: compressed the same way
//
// Compression (Perfetto's TrackCompressor): async slices of one (upid, name)
// share as few tracks as possible. A begin reuses the track its cookie had,
// else adopts the first track with nothing open, else adds one; an end
// finds its cookie's track the same way; an instant (N) goes on the first
// instant track whose last instant has ended, else on a new one. Each
// track's dimensions record its index in the set (track_compressor_idx);
// the tracks of one set share a track_group_id.
#ifndef SLUICE_USER_QUERY_IMPORTER_TRACK_TRACKER_H_
#define SLUICE_USER_QUERY_IMPORTER_TRACK_TRACKER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "user/query/storage/trace_storage.h"

namespace sluice {

class TrackTracker {
 public:
  explicit TrackTracker(TraceStorage* storage);
  TrackTracker(const TrackTracker&) = delete;
  TrackTracker& operator=(const TrackTracker&) = delete;

  // Per-CPU tracks: counters (cpu_idle, cpu_frequency) and slices
  // (cpu_irq). `type` also keys the track; `name` is its display name.
  uint32_t CpuCounterTrack(StringId type, StringId name, uint32_t cpu) { return CpuTrack(type, name, cpu, true); }
  uint32_t CpuSliceTrack(StringId type, StringId name, uint32_t cpu) { return CpuTrack(type, name, cpu, false); }
  // The per-CPU counter track upstream makes for each CPU that PerfSample
  // packets name: "cpu-clock" (the default timebase), type
  // perf_cpu_counter, of perf session 0. sluice's PerfSamples carry only
  // the BPF ring's losses, so the track has no values, as upstream's.
  uint32_t PerfCpuCounterTrack(uint32_t cpu);
  uint32_t ThreadTrack(uint32_t utid);
  uint32_t ProcessCounterTrack(uint32_t upid, StringId name);
  // A track of its own kind, one per (type, dimension): Android's
  // screen_state and android_device_state (no dimension), android_lmk and
  // oom_score_adj (per upid: `upid`), battery_stats (per name: `key_value`,
  // a dimension named `key`). kNullU32 / kNullStringId: no such dimension.
  uint32_t SingletonTrack(StringId type, StringId name, bool counter, uint32_t upid = kNullU32,
                          StringId key = kNullStringId, StringId key_value = kNullStringId);
  // A track of its own kind per value of one integer dimension: block_io
  // per block_device (upstream makes it a counter track holding slices).
  uint32_t IntDimensionTrack(StringId type, StringId name, bool counter, StringId key, int64_t value);
  // A track of its own kind per set of dimensions `dims` (sys_stats'
  // diskstat, thermal, cpuidle and gpu tracks), with `unit`; `cpu` also
  // fills the track's cpu column (cpu_idle_state's).
  uint32_t DimensionsTrack(StringId type, StringId name, bool counter, std::vector<Arg> dims,
                           StringId unit = kNullStringId, uint32_t cpu = kNullU32);
  // A thread's counter track of its own kind (dimension utid, and `key` =
  // `key_value` when given): oom_score_adj_thread_fallback and
  // process_memory_thread_fallback, for a thread of no known process.
  uint32_t ThreadCounterTrack(StringId type, StringId name, uint32_t utid, StringId key = kNullStringId,
                              StringId key_value = kNullStringId) {
    return ThreadTrackOfType(type, name, utid, key, key_value, /*counter=*/true);
  }
  // A thread's slice track of its own kind (thread_funcgraph), beside its
  // thread_execution track: in thread_track, with the thread's utid.
  uint32_t ThreadSliceTrack(StringId type, StringId name, uint32_t utid) {
    return ThreadTrackOfType(type, name, utid, kNullStringId, kNullStringId, /*counter=*/false);
  }

  // A track event descriptor's track of its own (thread_track_event,
  // process_counter_track_event, ...): one per (type, dims); `source_args`
  // is called once, when the row is made.
  uint32_t TrackEventTrack(StringId type, StringId name, bool counter, std::vector<Arg> dims, uint32_t utid,
                           uint32_t upid, StringId unit, const std::function<uint32_t()>& source_args);
  // Track event descriptor tracks whose siblings merge
  // ({thread,process,global}_merged_track_event): the set is keyed by
  // (type, dims), compressed as async slices are, each row's dims being
  // `dims` and its track_compressor_idx. A begin and its end pass the same
  // cookie (the descriptor's uuid); an instant is a begin and an end.
  uint32_t MergedBegin(StringId type, StringId name, const std::vector<Arg>& dims, uint32_t utid, uint32_t upid,
                       int64_t cookie, const std::function<uint32_t()>& source_args);
  uint32_t MergedEnd(StringId type, StringId name, const std::vector<Arg>& dims, uint32_t utid, uint32_t upid,
                     int64_t cookie, const std::function<uint32_t()>& source_args);

  // Legacy unnestable (S/F): a begin while the track has a slice open
  // keeps the track "busy" (nest count saturates at 1) instead of nesting.
  enum class Nesting { kNestable, kLegacyUnnestable };
  uint32_t AsyncBegin(StringId type, uint32_t upid, StringId name, int64_t cookie, Nesting nesting);
  uint32_t AsyncEnd(StringId type, uint32_t upid, StringId name, int64_t cookie);
  uint32_t AsyncInstant(StringId type, uint32_t upid, StringId name, int64_t ts);

 private:
  struct CompressedTrack {
    bool instant = false;    // a track of instants (N), matched by time
    int64_t cookie = 0;      // a track of cookie slices: its current cookie
    uint32_t nest_count = 0;
    int64_t ts_end = 0;      // instant tracks: end of the last instant
    uint32_t track_id = kNullU32;
  };
  struct TrackSet {
    std::vector<CompressedTrack> tracks;
    uint32_t group = 0;
  };
  using SetKey = std::tuple<StringId, uint32_t, StringId>;  // type, upid, name

  uint32_t CpuTrack(StringId type, StringId name, uint32_t cpu, bool counter);
  uint32_t ThreadTrackOfType(StringId type, StringId name, uint32_t utid, StringId key, StringId key_value,
                             bool counter);
  TrackSet& SetOf(StringId type, uint32_t upid, StringId name);
  uint32_t TrackForCookie(TrackSet& set, int64_t cookie);
  uint32_t TrackRow(TrackSet& set, uint32_t index, StringId type, uint32_t upid, StringId name);
  TrackSet& MergedSet(StringId type, const std::vector<Arg>& dims);
  uint32_t MergedRow(TrackSet& set, uint32_t index, StringId type, StringId name, const std::vector<Arg>& dims,
                     uint32_t utid, uint32_t upid, const std::function<uint32_t()>& source_args);

  TraceStorage* storage_;
  StringId thread_execution_, atrace_counter_;
  StringId utid_key_, upid_key_, name_key_, cpu_key_, compressor_idx_key_;
  std::unordered_map<uint64_t, uint32_t> cpu_tracks_;  // (type << 32 | cpu)
  std::unordered_map<uint32_t, uint32_t> thread_tracks_;       // utid
  std::unordered_map<uint32_t, uint32_t> perf_cpu_tracks_;     // cpu
  std::map<std::tuple<StringId, uint32_t, StringId>, uint32_t> typed_thread_tracks_;  // type, utid, key_value
  std::map<std::pair<uint32_t, StringId>, uint32_t> process_counter_tracks_;
  std::map<SetKey, TrackSet> async_sets_;
  std::map<std::tuple<StringId, uint32_t, StringId>, uint32_t> singleton_tracks_;
  std::map<std::tuple<StringId, StringId, int64_t>, uint32_t> int_dimension_tracks_;  // type, key, value
  std::map<std::pair<StringId, uint32_t>, uint32_t> track_event_tracks_;  // type, dims set
  std::unordered_map<std::string, TrackSet> merged_sets_;                  // type and dims, as bytes
  std::map<std::pair<StringId, uint32_t>, uint32_t> dimension_tracks_;  // type, dimension arg set  // type, upid, key_value
  uint32_t next_group_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_TRACK_TRACKER_H_
