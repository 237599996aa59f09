// TrackEventImporter: TrackDescriptor and TrackEvent packets (the Perfetto
// SDK's track events: what an instrumented app or daemon writes, and the
// `perfetto` command line's traces carry) as tracks, slices, counters,
// flows and args, with the rules of Perfetto's trace processor (v58) so that
// the same trace gives the same rows.
//
// Two steps, as upstream:
//   - Tokenize, in file order: descriptors reserve their uuid (the tree of
//     tracks), interned names and the sequence's defaults apply, counter
//     values are made absolute (incremental counters, unit multipliers), and
//     each event is decoded into a Record whose strings are already
//     interned, so that a later clear of the sequence's interning cannot
//     change it.
//   - Parse, in timestamp order (the importer's sorter): descriptors name
//     threads and processes; events find their track and become slices,
//     counters and flows.
//
// Tracks (upstream's types and dimensions):
//   thread descriptor       the thread's thread_execution track (shared with
//                           its other slices), or thread_track_event when it
//                           disallows merging with system tracks
//   process descriptor      process_track_event (upid, track_uuid)
//   a child or a root of    {thread,process,global}_track_event per uuid, or,
//   neither                 when siblings merge (the default: by name), one
//                           of the {thread,process,global}_merged_track_event
//                           tracks shared by siblings of one name, compressed
//                           as async slices are (cookie: the uuid)
//   counter descriptor      {thread,process,global}_counter_track_event
// Descriptor-made tracks carry source args: source "descriptor", trace_id
// (the uuid), is_root_in_scope, has_first_packet_on_sequence, description.
//
// Flows (flow_ids, terminating_flow_ids and their _old forms): an id's first
// slice starts the flow, each later one adds a flow row from the previous
// (by timestamp) and becomes the new end; a terminating id adds its last row
// and forgets the id, so that it can start again.
//
// Not imported (counted in stats: track_event_unsupported_phases, or
// track_event_parser_errors where upstream counts one): legacy Chrome
// JSON-era fields (async ids, v1/v2 flow events, metadata events), state
// tracks' values (a state event on another track is an error, as upstream),
// thread time and instruction counts, callstacks, and the typed Chrome args.
// An end event ends the innermost open slice of its category and name, as
// upstream matches it. Timestamps must be in the
// trace clock (packet timestamp without timestamp_clock_id, or the boot
// clock); others count clock_sync_failure.
#ifndef SLUICE_USER_QUERY_IMPORTER_TRACK_EVENT_IMPORTER_H_
#define SLUICE_USER_QUERY_IMPORTER_TRACK_EVENT_IMPORTER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "user/query/importer/process_tracker.h"
#include "user/query/importer/slice_tracker.h"
#include "user/query/importer/track_tracker.h"
#include "user/query/storage/trace_storage.h"

namespace sluice {

class TrackEventImporter {
 public:
  TrackEventImporter(TraceStorage* storage, ProcessTracker* processes, TrackTracker* tracks, SliceTracker* slices);
  TrackEventImporter(const TrackEventImporter&) = delete;
  TrackEventImporter& operator=(const TrackEventImporter&) = delete;

  // --- Tokenize (file order) ---
  // A packet that clears the sequence's incremental state: its interned
  // strings, defaults, thread descriptor and incremental counters go.
  void ClearIncrementalState(uint32_t sequence);
  void OnFirstPacketOnSequence(uint32_t sequence) { sequences_with_first_packet_.insert(sequence); }
  // InternedData: event_categories, event_names, debug_annotation_names and
  // debug_annotation_string_values.
  void OnInternedData(uint32_t sequence, std::string_view interned_data);
  // TracePacketDefaults: the sequence's default track and extra counters.
  void OnPacketDefaults(uint32_t sequence, std::string_view defaults);
  // A legacy ThreadDescriptor packet: the sequence's thread.
  void OnThreadDescriptor(uint32_t sequence, std::string_view thread_descriptor);
  // A TrackDescriptor: reserves its uuid. Returns the slot of the record
  // to parse at `ts` in timestamp order, if there is one.
  std::optional<uint32_t> TokenizeDescriptor(uint32_t sequence, int64_t ts, std::string_view descriptor);
  // A TrackEvent. `clock_id` is the packet's timestamp_clock_id (0: none).
  // Returns the record's slot and sets *ts to its timestamp.
  std::optional<uint32_t> TokenizeEvent(uint32_t sequence, int64_t packet_ts, bool has_ts, uint32_t clock_id,
                                        std::string_view event, int64_t* ts);

  // --- Parse (timestamp order) ---
  void Parse(uint32_t slot);

  int64_t parser_errors() const { return parser_errors_; }
  int64_t tokenizer_errors() const { return tokenizer_errors_; }
  int64_t clock_sync_failures() const { return clock_sync_failures_; }
  int64_t unsupported_events() const { return unsupported_events_; }

 private:
  enum class Merge : uint8_t { kByName = 0, kNone = 1, kByKey = 2 };
  struct Reservation {
    uint64_t parent_uuid = 0;
    std::optional<int64_t> pid, tid;
    StringId name = kNullStringId;
    StringId description = kNullStringId;
    bool use_separate_track = false;
    bool is_counter = false;
    bool is_state = false;  // a state track: its events are not imported
    StringId unit = kNullStringId;
    StringId counter_category = kNullStringId;
    int64_t unit_multiplier = 0;
    bool is_incremental = false;
    Merge merge = Merge::kByName;
    StringId merge_key = kNullStringId;
  };
  enum class Scope : uint8_t { kThread, kProcess, kGlobal };
  struct Resolved {
    Scope scope = Scope::kGlobal;
    uint32_t utid = kNullU32;
    uint32_t upid = kNullU32;
    bool is_root = false;
  };
  struct Descriptor {
    Reservation reservation;
    std::optional<Resolved> resolved;
    bool resolve_failed = false;
    uint32_t track = kNullU32;  // a track of its own, once interned
    bool merged = false;        // else: a set of merged tracks
    StringId merged_type = kNullStringId;
    std::vector<Arg> merged_dims;
    StringId merged_name = kNullStringId;
    uint32_t merged_utid = kNullU32, merged_upid = kNullU32;  // the merged rows' thread or process
  };
  struct SequenceState {
    std::unordered_map<uint64_t, StringId> event_names, categories, annotation_names, annotation_strings;
    std::optional<uint64_t> default_track_uuid;
    std::vector<uint64_t> default_extra_counter_uuids, default_extra_double_counter_uuids;
    bool thread_valid = false;
    int64_t pid = 0, tid = 0;
    uint32_t default_clock_id = 0;  // TracePacketDefaults.timestamp_clock_id
    std::unordered_map<uint64_t, double> incremental_counters;
  };
  // One event or descriptor between tokenize and parse.
  struct Record {
    bool descriptor = false;
    uint32_t sequence = 0;
    int64_t ts = 0;
    // Descriptor: the uuid and what names its thread or process.
    uint64_t uuid = 0;
    bool has_thread = false, has_process = false;
    int64_t pid = 0, tid = 0;
    StringId thread_name = kNullStringId, process_name = kNullStringId;
    // Event.
    int32_t type = 0;          // TrackEvent.Type
    int32_t legacy_phase = 0;  // LegacyEvent.phase, 0 if none
    int64_t legacy_duration_ns = 0;
    int32_t legacy_instant_scope = 0;  // 1 global, 2 process, else thread
    std::optional<int64_t> pid_override, tid_override;
    bool has_track_uuid = false, has_type = false;
    uint64_t track_uuid = 0;  // the event's or the sequence default's
    bool thread_valid = false;
    int64_t seq_pid = 0, seq_tid = 0;
    StringId name = kNullStringId, category = kNullStringId;
    double counter_value = 0;
    std::vector<std::pair<uint64_t, double>> extra_counters;
    std::vector<uint64_t> flow_ids, terminating_flow_ids;
    std::vector<Arg> args;
  };

  uint32_t NewSlot();
  SequenceState& Sequence(uint32_t sequence) { return sequences_[sequence]; }
  void Reserve(uint64_t uuid, const Reservation& reservation);
  std::optional<Resolved> Resolve(uint64_t uuid);
  bool HierarchyValid(uint64_t uuid);
  // The track of a begin/end/instant/counter on descriptor track `uuid`.
  enum class Use { kBegin, kEnd, kInstant, kCounter };
  uint32_t DescriptorTrack(uint64_t uuid, StringId event_name, uint32_t sequence, Use use);
  bool InternDescriptorTrack(uint64_t uuid, StringId event_name, uint32_t sequence);
  uint32_t SourceArgs(uint64_t uuid, uint32_t sequence, bool is_root_in_scope);
  void ParseDescriptor(const Record& r);
  void ParseEvent(Record& r);
  void AddFlows(const Record& r, uint32_t slice);
  void AddAnnotation(std::string_view annotation, SequenceState& seq, std::string prefix, std::vector<Arg>* args,
                     int depth);
  std::optional<double> AbsoluteCounterValue(SequenceState& seq, uint64_t uuid, double value);

  TraceStorage* storage_;
  ProcessTracker* processes_;
  TrackTracker* tracks_;
  SliceTracker* slices_;
  std::unordered_map<uint32_t, SequenceState> sequences_;
  std::unordered_set<uint32_t> sequences_with_first_packet_;
  std::unordered_map<uint64_t, Descriptor> descriptors_;
  std::unordered_map<uint32_t, uint64_t> uuid_by_utid_, uuid_by_upid_;
  std::vector<Record> records_;
  std::vector<uint32_t> free_slots_;
  std::unordered_map<uint64_t, uint32_t> open_flows_;  // flow id -> its last slice
  StringId unit_names_[4];
  StringId default_track_name_;
  StringId passthrough_utid_key_;  // interned once: events carry it often
  int64_t parser_errors_ = 0;
  int64_t tokenizer_errors_ = 0;
  int64_t clock_sync_failures_ = 0;
  int64_t unsupported_events_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_TRACK_EVENT_IMPORTER_H_
