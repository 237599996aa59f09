#include "user/query/importer/track_event_importer.h"

#include <cstring>
#include <string>
#include <utility>

#include "user/query/importer/proto_wire_reader.h"

namespace sluice {
namespace {

// TrackDescriptor
constexpr uint32_t kDescUuid = 1, kDescName = 2, kDescProcess = 3, kDescThread = 4, kDescParentUuid = 5,
                   kDescCounter = 8, kDescDisallowMerging = 9, kDescStaticName = 10, kDescAtraceName = 13,
                   kDescDescription = 14, kDescSiblingMergeBehavior = 15, kDescSiblingMergeKey = 16,
                   kDescSiblingMergeKeyInt = 17, kDescState = 18;
// ProcessDescriptor / ThreadDescriptor
constexpr uint32_t kProcessPid = 1, kProcessName = 6;
constexpr uint32_t kThreadPid = 1, kThreadTid = 2, kThreadName = 5;
// CounterDescriptor
constexpr uint32_t kCounterType = 1, kCounterCategories = 2, kCounterUnit = 3, kCounterUnitMultiplier = 4,
                   kCounterIsIncremental = 5, kCounterUnitName = 6;
// TrackEvent
constexpr uint32_t kEventCategoryIids = 3, kEventDebugAnnotations = 4, kEventLegacyEvent = 6, kEventType = 9,
                   kEventNameIid = 10, kEventTrackUuid = 11, kEventExtraCounterValues = 12,
                   kEventCategories = 22, kEventName = 23, kEventCounterValue = 30,
                   kEventExtraCounterTrackUuids = 31, kEventFlowIdsOld = 36, kEventTerminatingFlowIdsOld = 42,
                   kEventDoubleCounterValue = 44, kEventExtraDoubleCounterTrackUuids = 45,
                   kEventExtraDoubleCounterValues = 46, kEventFlowIds = 47, kEventTerminatingFlowIds = 48;
// TrackEvent.LegacyEvent
constexpr uint32_t kLegacyNameIid = 1, kLegacyPhase = 2, kLegacyDurationUs = 3, kLegacyInstantScope = 14,
                   kLegacyPidOverride = 18, kLegacyTidOverride = 19;
constexpr int32_t kScopeGlobal = 1, kScopeProcess = 2;

// Upstream's synthetic tids (a pid override without a tid): the pid in the
// high half. (-1 as the tid makes -1, as upstream's does.)
int64_t SyntheticTid(int64_t tid, int64_t pid) { return static_cast<int64_t>(static_cast<uint64_t>(pid) << 32) | tid; }
bool IsSyntheticTid(int64_t tid) { return (static_cast<uint64_t>(tid) & 0xffffffff00000000ull) != 0; }
// TrackEventDefaults (in TracePacketDefaults field 11)
constexpr uint32_t kPacketDefaultsTrackEvent = 11, kPacketDefaultsClockId = 58;
constexpr uint32_t kDefaultsTrackUuid = 11, kDefaultsExtraCounterUuids = 31, kDefaultsExtraDoubleCounterUuids = 45;
// InternedData
constexpr uint32_t kInternedCategories = 1, kInternedNames = 2, kInternedAnnotationNames = 3,
                   kInternedAnnotationStrings = 29;
// DebugAnnotation
constexpr uint32_t kAnnNameIid = 1, kAnnBool = 2, kAnnUint = 3, kAnnInt = 4, kAnnDouble = 5, kAnnString = 6,
                   kAnnPointer = 7, kAnnLegacyJson = 9, kAnnName = 10, kAnnDictEntries = 11,
                   kAnnArrayValues = 12, kAnnStringIid = 17;

constexpr int32_t kTypeSliceBegin = 1, kTypeSliceEnd = 2, kTypeInstant = 3, kTypeCounter = 4, kTypeState = 5;
constexpr uint32_t kBootClock = 6;
constexpr uint64_t kMaxAncestors = 100;
// Nested debug annotations deeper than this are not followed: a hostile
// trace cannot recurse the stack away.
constexpr int kMaxAnnotationDepth = 32;

// Values of a repeated fixed64 field, packed or not, appended to `out`.
void AppendFixed64s(const WireField& f, std::vector<uint64_t>* out) {
  if (f.type == WireType::kFixed64 || f.type == WireType::kVarint) {
    out->push_back(f.value);
    return;
  }
  if (f.type != WireType::kBytes) return;
  for (size_t i = 0; i + 8 <= f.bytes.size(); i += 8) {
    uint64_t v;
    std::memcpy(&v, f.bytes.data() + i, 8);
    out->push_back(v);
  }
}

double AsDouble(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

// InternedData's EventName / EventCategory / DebugAnnotationName ({iid 1,
// name 2}) and InternedString ({iid 1, str 2}) have the same shape.
void ReadInterned(std::string_view bytes, StringPool& strings, std::unordered_map<uint64_t, StringId>* map) {
  ProtoWireReader reader(bytes);
  WireField f;
  uint64_t iid = 0;
  std::string_view name;
  bool has_name = false;
  while (reader.Next(&f)) {
    if (f.number == 1 && f.type == WireType::kVarint) iid = f.value;
    if (f.number == 2 && f.type == WireType::kBytes) name = f.bytes, has_name = true;
  }
  if (reader.ok() && has_name) (*map)[iid] = strings.Intern(name);
}

}  // namespace

TrackEventImporter::TrackEventImporter(TraceStorage* storage, ProcessTracker* processes, TrackTracker* tracks,
                                       SliceTracker* slices)
    : storage_(storage), processes_(processes), tracks_(tracks), slices_(slices) {
  StringPool& s = storage->strings;
  unit_names_[0] = kNullStringId;
  unit_names_[1] = s.Intern("ns");
  unit_names_[2] = s.Intern("count");
  unit_names_[3] = s.Intern("bytes");
  default_track_name_ = s.Intern("Default Track");
  passthrough_utid_key_ = s.Intern("legacy_event.passthrough_utid");
}

uint32_t TrackEventImporter::NewSlot() {
  if (!free_slots_.empty()) {
    uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    records_[slot] = Record{};
    return slot;
  }
  records_.emplace_back();
  return static_cast<uint32_t>(records_.size() - 1);
}

void TrackEventImporter::ClearIncrementalState(uint32_t sequence) {
  SequenceState& seq = Sequence(sequence);
  seq = SequenceState{};
}

void TrackEventImporter::OnInternedData(uint32_t sequence, std::string_view interned_data) {
  ProtoWireReader reader(interned_data);
  WireField f;
  SequenceState* seq = nullptr;
  while (reader.Next(&f)) {
    if (f.type != WireType::kBytes) continue;
    std::unordered_map<uint64_t, StringId>* map = nullptr;
    if (!seq &&
        (f.number == kInternedCategories || f.number == kInternedNames || f.number == kInternedAnnotationNames ||
         f.number == kInternedAnnotationStrings))
      seq = &Sequence(sequence);
    switch (f.number) {
      case kInternedCategories: map = &seq->categories; break;
      case kInternedNames: map = &seq->event_names; break;
      case kInternedAnnotationNames: map = &seq->annotation_names; break;
      case kInternedAnnotationStrings: map = &seq->annotation_strings; break;
      default: break;
    }
    if (map) ReadInterned(f.bytes, storage_->strings, map);
  }
}

void TrackEventImporter::OnPacketDefaults(uint32_t sequence, std::string_view defaults) {
  SequenceState& seq = Sequence(sequence);
  ProtoWireReader reader(defaults);
  WireField f;
  seq.default_clock_id = 0;
  while (reader.Next(&f)) {
    if (f.number == kPacketDefaultsClockId && f.type == WireType::kVarint)
      seq.default_clock_id = static_cast<uint32_t>(f.value);
    if (f.number != kPacketDefaultsTrackEvent || f.type != WireType::kBytes) continue;
    seq.default_track_uuid.reset();
    seq.default_extra_counter_uuids.clear();
    seq.default_extra_double_counter_uuids.clear();
    ProtoWireReader track_event(f.bytes);
    WireField d;
    while (track_event.Next(&d)) {
      if (d.number == kDefaultsTrackUuid && d.type == WireType::kVarint) seq.default_track_uuid = d.value;
      if (d.number == kDefaultsExtraCounterUuids) AppendVarints(d, &seq.default_extra_counter_uuids);
      if (d.number == kDefaultsExtraDoubleCounterUuids) AppendVarints(d, &seq.default_extra_double_counter_uuids);
    }
  }
}

void TrackEventImporter::OnThreadDescriptor(uint32_t sequence, std::string_view thread_descriptor) {
  SequenceState& seq = Sequence(sequence);
  ProtoWireReader reader(thread_descriptor);
  WireField f;
  while (reader.Next(&f)) {
    if (f.type != WireType::kVarint) continue;
    if (f.number == kThreadPid) seq.pid = static_cast<int32_t>(f.value);
    if (f.number == kThreadTid) seq.tid = static_cast<int64_t>(f.value);
  }
  seq.thread_valid = reader.ok();
}

void TrackEventImporter::Reserve(uint64_t uuid, const Reservation& reservation) {
  auto [it, inserted] = descriptors_.try_emplace(uuid);
  if (inserted) {
    it->second.reservation = reservation;
    return;
  }
  Reservation& have = it->second.reservation;
  // The same uuid described twice must describe the same track; a
  // conflicting one is ignored, as upstream.
  if (std::tie(have.parent_uuid, have.pid, have.tid, have.is_counter, have.is_state, have.merge, have.merge_key) !=
      std::tie(reservation.parent_uuid, reservation.pid, reservation.tid, reservation.is_counter, reservation.is_state,
               reservation.merge, reservation.merge_key)) {
    tokenizer_errors_++;
    return;
  }
  if (reservation.name != kNullStringId && (have.name == kNullStringId || reservation.merge == Merge::kNone)) {
    have.name = reservation.name;
    if (reservation.merge == Merge::kNone && it->second.track != kNullU32)
      storage_->track.name[it->second.track] = reservation.name;
  }
}

std::optional<uint32_t> TrackEventImporter::TokenizeDescriptor(uint32_t sequence, int64_t ts,
                                                               std::string_view descriptor) {
  Reservation r;
  uint64_t uuid = 0;
  bool has_uuid = false;
  std::string_view thread, process, counter;
  bool has_thread = false, has_process = false, has_counter = false, has_name = false;
  ProtoWireReader reader(descriptor);
  WireField f;
  StringPool& s = storage_->strings;
  while (reader.Next(&f)) {
    const bool varint = f.type == WireType::kVarint, bytes = f.type == WireType::kBytes;
    switch (f.number) {
      case kDescUuid: if (varint) uuid = f.value, has_uuid = true; break;
      case kDescParentUuid: if (varint) r.parent_uuid = f.value; break;
      case kDescName: case kDescStaticName: case kDescAtraceName:
        if (bytes && !has_name) r.name = s.Intern(f.bytes), has_name = true;
        break;
      case kDescDescription: if (bytes) r.description = s.Intern(f.bytes); break;
      case kDescThread: if (bytes) thread = f.bytes, has_thread = true; break;
      case kDescProcess: if (bytes) process = f.bytes, has_process = true; break;
      case kDescCounter: if (bytes) counter = f.bytes, has_counter = true; break;
      case kDescDisallowMerging: if (varint) r.use_separate_track = f.value != 0; break;
      case kDescSiblingMergeBehavior:
        if (varint) r.merge = f.value == 2 ? Merge::kNone : f.value == 3 ? Merge::kByKey : Merge::kByName;
        break;
      case kDescSiblingMergeKey: if (bytes) r.merge_key = s.Intern(f.bytes); break;
      case kDescSiblingMergeKeyInt:
        if (varint) r.merge_key = s.Intern("sibling_merge_key_int:" + std::to_string(f.value));
        break;
      case kDescState: r.is_state = true; break;
      default: break;
    }
  }
  if (!reader.ok() || !has_uuid) {
    tokenizer_errors_++;
    return std::nullopt;
  }
  if (r.merge != Merge::kByKey) r.merge_key = kNullStringId;
  const uint32_t slot = NewSlot();
  Record& rec = records_[slot];
  rec.descriptor = true;
  rec.sequence = sequence;
  rec.ts = ts;
  rec.uuid = uuid;
  if (has_thread) {
    bool has_pid = false, has_tid = false;
    ProtoWireReader t(thread);
    while (t.Next(&f)) {
      if (f.number == kThreadPid && f.type == WireType::kVarint) rec.pid = static_cast<int32_t>(f.value), has_pid = true;
      if (f.number == kThreadTid && f.type == WireType::kVarint)
        rec.tid = static_cast<int64_t>(f.value), has_tid = true;
      if (f.number == kThreadName && f.type == WireType::kBytes && !f.bytes.empty())
        rec.thread_name = s.Intern(f.bytes);
    }
    if (!has_pid || !has_tid) {
      tokenizer_errors_++;
      free_slots_.push_back(slot);
      return std::nullopt;
    }
    rec.has_thread = true;
    r.pid = rec.pid;
    r.tid = rec.tid;
    Reserve(uuid, r);
    // A thread's descriptor is also its sequence's thread (for events that
    // name no track), as a ThreadDescriptor packet would be.
    SequenceState& seq = Sequence(sequence);
    seq.thread_valid = true, seq.pid = rec.pid, seq.tid = rec.tid;
    return slot;
  }
  if (has_process) {
    bool has_pid = false;
    ProtoWireReader p(process);
    while (p.Next(&f)) {
      if (f.number == kProcessPid && f.type == WireType::kVarint) rec.pid = static_cast<int32_t>(f.value), has_pid = true;
      if (f.number == kProcessName && f.type == WireType::kBytes && !f.bytes.empty())
        rec.process_name = s.Intern(f.bytes);
    }
    if (!has_pid) {
      tokenizer_errors_++;
      free_slots_.push_back(slot);
      return std::nullopt;
    }
    rec.has_process = true;
    r.pid = rec.pid;
    Reserve(uuid, r);
    return slot;
  }
  if (has_counter) {
    r.is_counter = true;
    ProtoWireReader c(counter);
    std::string categories;
    uint64_t unit = 0, type = 0;
    StringId unit_name = kNullStringId;
    while (c.Next(&f)) {
      if (f.number == kCounterType && f.type == WireType::kVarint) type = f.value;
      if (f.number == kCounterUnit && f.type == WireType::kVarint) unit = f.value;
      if (f.number == kCounterUnitName && f.type == WireType::kBytes) unit_name = s.Intern(f.bytes);
      if (f.number == kCounterUnitMultiplier && f.type == WireType::kVarint)
        r.unit_multiplier = static_cast<int64_t>(f.value);
      if (f.number == kCounterIsIncremental && f.type == WireType::kVarint) r.is_incremental = f.value != 0;
      if (f.number == kCounterCategories && f.type == WireType::kBytes) {
        if (!categories.empty()) categories += ",";
        categories.append(f.bytes);
      }
    }
    if (!categories.empty()) r.counter_category = s.Intern(categories);
    // Built-in counters (thread time, instruction count) are named and
    // united by their type.
    if (type == 1) {
      if (r.name == kNullStringId) r.name = s.Intern("thread_time");
      r.unit = unit_names_[1];
    } else if (type == 2) {
      if (r.name == kNullStringId) r.name = s.Intern("thread_instruction_count");
      r.unit = unit_names_[2];
    } else {
      r.unit = unit > 0 && unit < 4 ? unit_names_[unit] : unit_name == kNullStringId ? s.Intern("") : unit_name;
    }
  }
  Reserve(uuid, r);
  return slot;
}

std::optional<double> TrackEventImporter::AbsoluteCounterValue(SequenceState& seq, uint64_t uuid, double value) {
  auto it = descriptors_.find(uuid);
  if (it == descriptors_.end() || !it->second.reservation.is_counter) return std::nullopt;
  const Reservation& r = it->second.reservation;
  if (r.unit_multiplier > 0) value *= static_cast<double>(r.unit_multiplier);
  if (r.is_incremental) {
    double& total = seq.incremental_counters[uuid];
    total += value;
    value = total;
  }
  return value;
}

std::optional<uint32_t> TrackEventImporter::TokenizeEvent(uint32_t sequence, int64_t packet_ts, bool has_ts,
                                                          uint32_t clock_id, std::string_view event, int64_t* ts) {
  if (!has_ts) {
    tokenizer_errors_++;  // upstream: track_event_missing_timestamp
    return std::nullopt;
  }
  SequenceState& seq = Sequence(sequence);
  if (clock_id == 0) clock_id = seq.default_clock_id;
  if (clock_id != 0 && clock_id != kBootClock) {
    clock_sync_failures_++;
    return std::nullopt;
  }
  if (packet_ts < 0) {
    tokenizer_errors_++;
    return std::nullopt;
  }
  const uint32_t slot = NewSlot();
  Record& r = records_[slot];
  r.sequence = sequence;
  r.ts = packet_ts;
  r.thread_valid = seq.thread_valid;
  r.seq_pid = seq.pid;
  r.seq_tid = seq.tid;
  StringPool& s = storage_->strings;
  std::vector<uint64_t> category_iids, extra_uuids, extra_values, extra_double_uuids, extra_double_values;
  std::vector<std::string_view> categories, annotations;
  uint64_t name_iid = 0, legacy_name_iid = 0;
  bool has_name = false, has_counter = false;
  std::string_view name;
  std::vector<uint64_t> flow_ids, flow_ids_old, terminating, terminating_old;
  ProtoWireReader reader(event);
  WireField f;
  while (reader.Next(&f)) {
    const bool varint = f.type == WireType::kVarint;
    switch (f.number) {
      case kEventCategoryIids: AppendVarints(f, &category_iids); break;
      case kEventCategories: if (f.type == WireType::kBytes) categories.push_back(f.bytes); break;
      case kEventNameIid: if (varint) name_iid = f.value; break;
      case kEventName: if (f.type == WireType::kBytes) name = f.bytes, has_name = true; break;
      case kEventType: if (varint) r.type = static_cast<int32_t>(f.value), r.has_type = true; break;
      case kEventTrackUuid: if (varint) r.track_uuid = f.value, r.has_track_uuid = true; break;
      case kEventCounterValue:
        if (varint) r.counter_value = static_cast<double>(static_cast<int64_t>(f.value)), has_counter = true;
        break;
      case kEventDoubleCounterValue:
        if (f.type == WireType::kFixed64) r.counter_value = AsDouble(f.value), has_counter = true;
        break;
      case kEventExtraCounterTrackUuids: AppendVarints(f, &extra_uuids); break;
      case kEventExtraCounterValues: AppendVarints(f, &extra_values); break;
      case kEventExtraDoubleCounterTrackUuids: AppendVarints(f, &extra_double_uuids); break;
      case kEventExtraDoubleCounterValues: AppendFixed64s(f, &extra_double_values); break;
      case kEventFlowIds: AppendFixed64s(f, &flow_ids); break;
      case kEventFlowIdsOld: AppendVarints(f, &flow_ids_old); break;
      case kEventTerminatingFlowIds: AppendFixed64s(f, &terminating); break;
      case kEventTerminatingFlowIdsOld: AppendVarints(f, &terminating_old); break;
      case kEventDebugAnnotations: if (f.type == WireType::kBytes) annotations.push_back(f.bytes); break;
      case kEventLegacyEvent:
        if (f.type == WireType::kBytes) {
          ProtoWireReader legacy(f.bytes);
          WireField l;
          while (legacy.Next(&l)) {
            if (l.type != WireType::kVarint) continue;
            if (l.number == kLegacyNameIid) legacy_name_iid = l.value;
            if (l.number == kLegacyPhase) r.legacy_phase = static_cast<int32_t>(l.value);
            if (l.number == kLegacyDurationUs) r.legacy_duration_ns = static_cast<int64_t>(l.value) * 1000;
            if (l.number == kLegacyInstantScope) r.legacy_instant_scope = static_cast<int32_t>(l.value);
            if (l.number == kLegacyPidOverride) r.pid_override = static_cast<int32_t>(l.value);
            if (l.number == kLegacyTidOverride) r.tid_override = static_cast<int32_t>(l.value);
          }
        }
        break;
      default: break;
    }
  }
  if (!reader.ok()) {
    tokenizer_errors_++;
    free_slots_.push_back(slot);
    return std::nullopt;
  }
  if (!r.has_track_uuid && seq.default_track_uuid) r.track_uuid = *seq.default_track_uuid;
  // Category: one interned or literal category as it is; several joined
  // with commas (interned first), an unknown iid as "unknown(iid)".
  if (category_iids.size() == 1 && categories.empty()) {
    auto it = seq.categories.find(category_iids[0]);
    r.category = it != seq.categories.end() ? it->second
                                            : s.Intern("unknown(" + std::to_string(category_iids[0]) + ")");
  } else if (category_iids.empty() && categories.size() == 1) {
    r.category = s.Intern(categories[0]);
  } else if (category_iids.size() + categories.size() > 1) {
    std::string joined;
    for (uint64_t iid : category_iids) {
      auto it = seq.categories.find(iid);
      if (it == seq.categories.end()) continue;
      if (!joined.empty()) joined += ",";
      joined.append(s.Get(it->second));
    }
    for (std::string_view c : categories) {
      if (!joined.empty()) joined += ",";
      joined.append(c);
    }
    if (!joined.empty()) r.category = s.Intern(joined);
  }
  if (!name_iid) name_iid = legacy_name_iid;
  if (name_iid) {
    auto it = seq.event_names.find(name_iid);
    if (it != seq.event_names.end()) r.name = it->second;
  } else if (has_name) {
    r.name = s.Intern(name);
  }
  if (!r.has_type && r.legacy_phase == 0) {
    parser_errors_++;  // upstream: "TrackEvent without type or phase"
    free_slots_.push_back(slot);
    return std::nullopt;
  }
  if (r.type == kTypeCounter) {
    if (!r.has_track_uuid && !seq.default_track_uuid) {
      tokenizer_errors_++;  // track_event_counter_missing_track_uuid
      free_slots_.push_back(slot);
      return std::nullopt;
    }
    std::optional<double> value =
        has_counter ? AbsoluteCounterValue(seq, r.track_uuid, r.counter_value) : std::nullopt;
    if (!value) {
      tokenizer_errors_++;  // missing value, or not a counter track
      free_slots_.push_back(slot);
      return std::nullopt;
    }
    r.counter_value = *value;
  }
  // Extra counters: values paired with the event's uuids, else the
  // sequence defaults'.
  auto extras = [&](const std::vector<uint64_t>& values, const std::vector<uint64_t>& uuids,
                    const std::vector<uint64_t>& defaults, bool is_double) {
    if (values.empty()) return true;
    const std::vector<uint64_t>& use = uuids.empty() ? defaults : uuids;
    if (use.size() < values.size()) return false;
    for (size_t i = 0; i < values.size(); ++i) {
      double v = is_double ? AsDouble(values[i]) : static_cast<double>(static_cast<int64_t>(values[i]));
      std::optional<double> abs = AbsoluteCounterValue(seq, use[i], v);
      if (!abs) return false;
      r.extra_counters.emplace_back(use[i], *abs);
    }
    return true;
  };
  if (!extras(extra_values, extra_uuids, seq.default_extra_counter_uuids, false) ||
      !extras(extra_double_values, extra_double_uuids, seq.default_extra_double_counter_uuids, true)) {
    tokenizer_errors_++;
    free_slots_.push_back(slot);
    return std::nullopt;
  }
  r.flow_ids = flow_ids.empty() ? std::move(flow_ids_old) : std::move(flow_ids);
  r.terminating_flow_ids = terminating.empty() ? std::move(terminating_old) : std::move(terminating);
  for (std::string_view a : annotations) AddAnnotation(a, seq, "debug", &r.args, 0);
  *ts = r.ts;
  return slot;
}

void TrackEventImporter::AddAnnotation(std::string_view annotation, SequenceState& seq, std::string prefix,
                                       std::vector<Arg>* args, int depth) {
  if (depth > kMaxAnnotationDepth) {
    parser_errors_++;
    return;
  }
  StringPool& s = storage_->strings;
  ProtoWireReader reader(annotation);
  WireField f;
  std::string_view name;
  bool named = false;
  std::optional<Arg> value;
  std::vector<std::string_view> dict, array;
  while (reader.Next(&f)) {
    switch (f.number) {
      case kAnnNameIid:
        if (f.type == WireType::kVarint) {
          auto it = seq.annotation_names.find(f.value);
          if (it != seq.annotation_names.end()) name = s.Get(it->second), named = true;
        }
        break;
      case kAnnName: if (f.type == WireType::kBytes) name = f.bytes, named = true; break;
      case kAnnBool: value = Arg{kNullStringId, ArgType::kBool, f.value != 0 ? 1 : 0, 0}; break;
      case kAnnUint: value = Arg{kNullStringId, ArgType::kUint, static_cast<int64_t>(f.value), 0}; break;
      case kAnnInt: value = Arg{kNullStringId, ArgType::kInt, static_cast<int64_t>(f.value), 0}; break;
      case kAnnDouble:
        if (f.type == WireType::kFixed64) value = Arg{kNullStringId, ArgType::kReal, 0, AsDouble(f.value)};
        break;
      case kAnnString: case kAnnLegacyJson:
        if (f.type == WireType::kBytes) value = Arg{kNullStringId, ArgType::kString, s.Intern(f.bytes), 0};
        break;
      case kAnnStringIid: {
        auto it = seq.annotation_strings.find(f.value);
        if (it != seq.annotation_strings.end()) value = Arg{kNullStringId, ArgType::kString, it->second, 0};
        break;
      }
      case kAnnPointer: value = Arg{kNullStringId, ArgType::kUint, static_cast<int64_t>(f.value), 0}; break;
      case kAnnDictEntries: if (f.type == WireType::kBytes) dict.push_back(f.bytes); break;
      case kAnnArrayValues: if (f.type == WireType::kBytes) array.push_back(f.bytes); break;
      default: break;
    }
  }
  if (!reader.ok()) {
    parser_errors_++;
    return;
  }
  // A top-level annotation needs a name; array entries are named by index.
  std::string key = prefix;
  if (named) key += "." + std::string(name);
  if (value) {
    value->key = s.Intern(key);
    args->push_back(*value);
  }
  for (std::string_view entry : dict) AddAnnotation(entry, seq, key, args, depth + 1);
  for (size_t i = 0; i < array.size(); ++i)
    AddAnnotation(array[i], seq, key + "[" + std::to_string(i) + "]", args, depth + 1);
}

bool TrackEventImporter::HierarchyValid(uint64_t uuid) {
  std::vector<uint64_t> seen;
  uint64_t current = uuid;
  for (uint64_t i = 0; i < kMaxAncestors; ++i) {
    if (current == 0) return true;
    for (uint64_t s : seen)
      if (s == current) return false;
    auto it = descriptors_.find(current);
    if (it == descriptors_.end()) return false;
    seen.push_back(current);
    current = it->second.reservation.parent_uuid;
  }
  return false;
}

std::optional<TrackEventImporter::Resolved> TrackEventImporter::Resolve(uint64_t uuid) {
  auto it = descriptors_.find(uuid);
  if (it == descriptors_.end()) {
    Reservation r;
    if (uuid == 0) r.name = default_track_name_;
    it = descriptors_.try_emplace(uuid).first;
    it->second.reservation = r;
  }
  if (it->second.resolved) return it->second.resolved;
  if (it->second.resolve_failed) return std::nullopt;
  if (!HierarchyValid(uuid)) {
    descriptors_[uuid].resolve_failed = true;
    return std::nullopt;
  }
  const Reservation r = it->second.reservation;
  std::optional<Resolved> parent;
  if (r.parent_uuid != 0) parent = Resolve(r.parent_uuid);
  Resolved resolved;
  if (r.tid) {
    uint32_t utid = processes_->UpdateThread(*r.tid, r.pid.value_or(0));
    auto [known, inserted] = uuid_by_utid_.try_emplace(utid, uuid);
    if (!inserted && known->second != uuid) {
      // Another descriptor for the thread: its tid was reused.
      known->second = uuid;
      utid = processes_->StartNewThreadForTid(*r.tid);
      utid = processes_->UpdateThread(*r.tid, r.pid.value_or(0));
      uuid_by_utid_[utid] = uuid;
    }
    resolved = Resolved{Scope::kThread, utid, kNullU32, true};
  } else if (r.pid) {
    uint32_t upid = processes_->GetOrCreateProcess(*r.pid);
    auto [known, inserted] = uuid_by_upid_.try_emplace(upid, uuid);
    if (!inserted && known->second != uuid) {
      known->second = uuid;
      upid = processes_->StartNewProcessForPid(*r.pid);
      uuid_by_upid_[upid] = uuid;
    }
    resolved = Resolved{Scope::kProcess, kNullU32, upid, true};
  } else if (parent && parent->scope != Scope::kGlobal) {
    resolved = Resolved{parent->scope, parent->utid, parent->upid, false};
  }
  descriptors_[uuid].resolved = resolved;
  return resolved;
}

uint32_t TrackEventImporter::SourceArgs(uint64_t uuid, uint32_t sequence, bool is_root_in_scope) {
  StringPool& s = storage_->strings;
  const Reservation& r = descriptors_[uuid].reservation;
  std::vector<Arg> args = {{s.Intern("source"), ArgType::kString, s.Intern("descriptor"), 0},
                           {s.Intern("trace_id"), ArgType::kInt, static_cast<int64_t>(uuid), 0},
                           {s.Intern("is_root_in_scope"), ArgType::kBool, is_root_in_scope ? 1 : 0, 0}};
  if (r.is_counter && r.counter_category != kNullStringId)
    args.push_back({s.Intern("category"), ArgType::kString, r.counter_category, 0});
  if (sequence != 0 && sequences_with_first_packet_.count(sequence))
    args.push_back({s.Intern("has_first_packet_on_sequence"), ArgType::kBool, 1, 0});
  if (r.description != kNullStringId) args.push_back({s.Intern("description"), ArgType::kString, r.description, 0});
  return storage_->args.Add(&args);
}

bool TrackEventImporter::InternDescriptorTrack(uint64_t uuid, StringId event_name, uint32_t sequence) {
  std::optional<Resolved> resolved = Resolve(uuid);
  if (!resolved) return false;
  Descriptor& d = descriptors_[uuid];
  if (d.track != kNullU32 || d.merged) return true;
  const Reservation r = d.reservation;
  StringPool& s = storage_->strings;
  const StringId utid_key = s.Intern("utid"), upid_key = s.Intern("upid"), uuid_key = s.Intern("track_uuid");
  const Arg uuid_dim{uuid_key, ArgType::kInt, static_cast<int64_t>(uuid), 0};
  // Parents are interned first, as upstream (their rows come before).
  std::optional<Resolved> parent;
  if (r.parent_uuid != 0) {
    InternDescriptorTrack(r.parent_uuid, kNullStringId, sequence);
    parent = Resolve(r.parent_uuid);
  }
  const uint32_t seq_for_args = uuid != 0 ? sequence : 0;
  auto own = [&](const char* type, StringId name, std::vector<Arg> dims, uint32_t utid, uint32_t upid,
                 bool is_root_in_scope) {
    d.track = tracks_->TrackEventTrack(s.Intern(type), name, r.is_counter, std::move(dims), utid, upid, r.unit,
                                       [&] { return SourceArgs(uuid, seq_for_args, is_root_in_scope); });
    descriptors_[uuid].track = d.track;
  };
  auto merged = [&](const char* type, StringId name, std::vector<Arg> dims, uint32_t utid, uint32_t upid) {
    Descriptor& m = descriptors_[uuid];
    m.merged = true;
    m.merged_utid = utid;
    m.merged_upid = upid;
    m.merged_type = s.Intern(type);
    m.merged_name = name;
    const StringId key = r.merge == Merge::kByKey ? r.merge_key : name;
    dims.push_back({s.Intern("parent_track_uuid"), ArgType::kInt, static_cast<int64_t>(r.parent_uuid), 0});
    dims.push_back({s.Intern("merge_key_type"), ArgType::kInt, static_cast<int64_t>(r.merge), 0});
    dims.push_back({s.Intern("merge_key_value"), ArgType::kString, key, 0});
    m.merged_dims = std::move(dims);
  };
  if (resolved->is_root) {
    if (resolved->scope == Scope::kThread) {
      const uint32_t utid = resolved->utid;
      if (r.is_counter) {
        own("thread_counter_track_event", r.name, {{utid_key, ArgType::kInt, utid, 0}, uuid_dim}, utid, kNullU32,
            true);
      } else if (r.use_separate_track) {
        own("thread_track_event", r.name, {{utid_key, ArgType::kInt, utid, 0}, uuid_dim}, utid, kNullU32, true);
      } else {
        d.track = tracks_->ThreadTrack(utid);
        descriptors_[uuid].track = d.track;
      }
      return true;
    }
    const uint32_t upid = resolved->upid;
    own(r.is_counter ? "process_counter_track_event" : "process_track_event", r.name,
        {{upid_key, ArgType::kInt, upid, 0}, uuid_dim}, kNullU32, upid, true);
    return true;
  }
  const StringId name = r.name == kNullStringId ? event_name : r.name;
  if (parent && parent->scope == Scope::kThread) {
    const Arg dim{utid_key, ArgType::kInt, parent->utid, 0};
    if (r.is_counter) own("thread_counter_track_event", r.name, {dim, uuid_dim}, parent->utid, kNullU32, false);
    else if (r.merge == Merge::kNone) own("thread_track_event", name, {dim, uuid_dim}, parent->utid, kNullU32, false);
    else merged("thread_merged_track_event", name, {dim}, parent->utid, kNullU32);
    return true;
  }
  if (parent && parent->scope == Scope::kProcess) {
    const Arg dim{upid_key, ArgType::kInt, parent->upid, 0};
    if (r.is_counter) own("process_counter_track_event", r.name, {dim, uuid_dim}, kNullU32, parent->upid, false);
    else if (r.merge == Merge::kNone) own("process_track_event", name, {dim, uuid_dim}, kNullU32, parent->upid, false);
    else merged("process_merged_track_event", name, {dim}, kNullU32, parent->upid);
    return true;
  }
  const bool root_in_scope = uuid == 0;
  if (r.is_counter) own("global_counter_track_event", r.name, {uuid_dim}, kNullU32, kNullU32, root_in_scope);
  else if (r.merge == Merge::kNone) own("global_track_event", name, {uuid_dim}, kNullU32, kNullU32, root_in_scope);
  else merged("global_merged_track_event", name, {}, kNullU32, kNullU32);
  return true;
}

uint32_t TrackEventImporter::DescriptorTrack(uint64_t uuid, StringId event_name, uint32_t sequence, Use use) {
  const uint32_t seq_for_args = uuid != 0 ? sequence : 0;
  if (!InternDescriptorTrack(uuid, event_name, seq_for_args)) return kNullU32;
  Descriptor& d = descriptors_[uuid];
  if (!d.merged) return d.track;
  const uint32_t utid = d.merged_utid, upid = d.merged_upid;
  const bool root_in_scope = uuid == 0;
  auto source_args = [&] { return SourceArgs(uuid, seq_for_args, root_in_scope); };
  const auto cookie = static_cast<int64_t>(uuid);
  switch (use) {
    case Use::kBegin:
      return tracks_->MergedBegin(d.merged_type, d.merged_name, d.merged_dims, utid, upid, cookie, source_args);
    case Use::kEnd:
      return tracks_->MergedEnd(d.merged_type, d.merged_name, d.merged_dims, utid, upid, cookie, source_args);
    case Use::kInstant:
    case Use::kCounter:
      tracks_->MergedBegin(d.merged_type, d.merged_name, d.merged_dims, utid, upid, cookie, source_args);
      return tracks_->MergedEnd(d.merged_type, d.merged_name, d.merged_dims, utid, upid, cookie, source_args);
  }
  return kNullU32;
}

void TrackEventImporter::Parse(uint32_t slot) {
  Record& r = records_[slot];
  if (r.descriptor) ParseDescriptor(r);
  else ParseEvent(r);
  records_[slot] = Record{};
  free_slots_.push_back(slot);
}

void TrackEventImporter::ParseDescriptor(const Record& r) {
  if (!Resolve(r.uuid)) {
    parser_errors_++;
    return;
  }
  if (r.has_thread) {
    uint32_t utid = processes_->UpdateThread(r.tid, r.pid);
    if (r.thread_name != kNullStringId)
      processes_->SetThreadName(utid, storage_->strings.Get(r.thread_name),
                                ProcessTracker::NamePriority::kTrackDescriptor);
  } else if (r.has_process) {
    uint32_t upid = processes_->GetOrCreateProcess(r.pid);
    if (r.process_name != kNullStringId) processes_->SetProcessNameIfUnset(upid, r.process_name);
  }
}

void TrackEventImporter::AddFlows(const Record& r, uint32_t slice) {
  const SliceTable& slices = storage_->slice;
  auto link = [&](uint64_t id, uint32_t previous) {
    // The earlier slice is the flow's source, whatever order they came in.
    const bool earlier = slices.ts[previous] <= slices.ts[slice];
    storage_->flow.Add(earlier ? previous : slice, earlier ? slice : previous, static_cast<int64_t>(id));
  };
  for (uint64_t id : r.flow_ids) {
    auto [it, inserted] = open_flows_.try_emplace(id, slice);
    if (inserted) continue;
    link(id, it->second);
    it->second = slice;
  }
  for (uint64_t id : r.terminating_flow_ids) {
    auto it = open_flows_.find(id);
    if (it == open_flows_.end()) continue;  // Nothing to end: no flow starts.
    const uint32_t previous = it->second;
    open_flows_.erase(it);
    link(id, previous);
  }
}

void TrackEventImporter::ParseEvent(Record& r) {
  StringPool& s = storage_->strings;
  uint32_t utid = kNullU32, upid = kNullU32, passthrough_utid = kNullU32;
  bool fallback = false;
  if (r.track_uuid != 0) {
    std::optional<Resolved> resolved = Resolve(r.track_uuid);
    if (!resolved) {
      parser_errors_++;
      return;
    }
    switch (resolved->scope) {
      case Scope::kThread:
        utid = resolved->utid;
        upid = storage_->thread.upid[utid];
        break;
      case Scope::kProcess:
        upid = resolved->upid;
        if (r.thread_valid) {
          uint32_t candidate = processes_->UpdateThread(r.seq_tid, r.seq_pid);
          if (storage_->thread.upid[candidate] == upid) passthrough_utid = candidate;
        }
        break;
      case Scope::kGlobal:
        if (r.thread_valid) passthrough_utid = processes_->UpdateThread(r.seq_tid, r.seq_pid);
        break;
    }
  } else {
    // No descriptor track: events that name none, or legacy ones, go on
    // the sequence's thread (or the one the overrides name).
    fallback = ((!r.has_track_uuid || !r.has_type) && r.thread_valid) || r.pid_override.has_value() ||
               (r.tid_override.has_value() && r.thread_valid);
    if (fallback) {
      int64_t pid = r.seq_pid, tid = r.seq_tid;
      if (r.pid_override) pid = *r.pid_override, tid = SyntheticTid(-1, pid);
      if (r.tid_override) {
        tid = *r.tid_override;
        if (IsSyntheticTid(r.seq_tid)) tid = SyntheticTid(tid, pid);
      }
      if (pid == 0 || tid == 0) {
        parser_errors_++;  // pid/tid 0 is the idle task's
        return;
      }
      utid = processes_->UpdateThread(tid, pid);
      upid = storage_->thread.upid[utid];
    }
  }
  // Legacy instants scoped to the process or the whole trace go on tracks
  // of their own; the thread stays as an arg.
  uint32_t scoped_instant_track = kNullU32;
  if (r.legacy_phase == 'i' || r.legacy_phase == 'I') {
    std::vector<Arg> chrome = {{s.Intern("source"), ArgType::kString, s.Intern("chrome"), 0}};
    auto source_args = [&] { return storage_->args.Add(&chrome); };
    if (r.legacy_instant_scope == kScopeGlobal) {
      passthrough_utid = utid, utid = kNullU32;
      scoped_instant_track = tracks_->TrackEventTrack(s.Intern("legacy_chrome_global_instants"), kNullStringId,
                                                      false, {}, kNullU32, kNullU32, kNullStringId, source_args);
    } else if (r.legacy_instant_scope == kScopeProcess) {
      if (upid == kNullU32) {
        parser_errors_++;  // a process-scoped instant without a process
        return;
      }
      passthrough_utid = utid, utid = kNullU32;
      scoped_instant_track =
          tracks_->TrackEventTrack(s.Intern("chrome_process_instant"), kNullStringId, false,
                                   {{s.Intern("upid"), ArgType::kInt, upid, 0}}, kNullU32, upid, kNullStringId,
                                   source_args);
    } else if (utid == kNullU32) {
      parser_errors_++;  // a thread-scoped instant without a thread
      return;
    }
  }
  if (passthrough_utid != kNullU32)
    r.args.push_back({passthrough_utid_key_, ArgType::kUint, passthrough_utid, 0});
  auto track_for = [&](Use use) {
    if (scoped_instant_track != kNullU32) return scoped_instant_track;
    if (r.track_uuid == 0 && fallback) return tracks_->ThreadTrack(utid);
    return DescriptorTrack(r.track_uuid, r.name, r.sequence, use);
  };
  // Extra counter values first, as upstream.
  for (const auto& [uuid, value] : r.extra_counters) {
    uint32_t track = DescriptorTrack(uuid, kNullStringId, r.sequence, Use::kCounter);
    if (track == kNullU32) {
      parser_errors_++;
      continue;
    }
    storage_->counter.Add(r.ts, track, value);
    storage_->ExtendBounds(r.ts);
  }
  // The trace's bounds grow only with the rows an event makes: an end with
  // nothing open, or an event dropped as an error, leaves them (as upstream,
  // whose bounds come from the tables).
  if (r.type == kTypeCounter) {
    uint32_t track = track_for(Use::kCounter);
    if (track == kNullU32) {
      parser_errors_++;
      return;
    }
    storage_->counter.Add(r.ts, track, r.counter_value, r.args.empty() ? kNoArgSet : storage_->args.Add(&r.args));
    storage_->ExtendBounds(r.ts);
    return;
  }
  if (r.type == kTypeState) {
    // A state track's values are not imported (sluice has no `state`
    // table); one on any other track, or with no track, is an error, as
    // upstream counts it.
    auto it = r.track_uuid == 0 ? descriptors_.end() : descriptors_.find(r.track_uuid);
    if (it != descriptors_.end() && it->second.reservation.is_state) unsupported_events_++;
    else parser_errors_++;
    return;
  }
  int32_t phase = r.legacy_phase;
  if (phase == 0) {
    switch (r.type) {
      case kTypeSliceBegin: phase = utid != kNullU32 ? 'B' : 'b'; break;
      case kTypeSliceEnd: phase = utid != kNullU32 ? 'E' : 'e'; break;
      case kTypeInstant: phase = utid != kNullU32 ? 'i' : 'n'; break;
      default: break;
    }
  }
  if ((phase == 'B' || phase == 'E' || phase == 'X') && utid == kNullU32) {
    parser_errors_++;  // a thread phase without a thread
    return;
  }
  uint32_t slice = kNullU32;
  switch (phase) {
    case 'B':
    case 'b': {
      uint32_t track = track_for(Use::kBegin);
      if (track == kNullU32) break;
      slice = slices_->Begin(r.ts, track, r.name, std::move(r.args), r.category);
      break;
    }
    case 'E':
    case 'e': {
      uint32_t track = track_for(Use::kEnd);
      if (track == kNullU32) break;
      slice = slices_->EndMatching(r.ts, track, r.category, r.name, std::move(r.args),
                                   SliceTracker::EndArgs::kReplace);
      if (slice == kNullU32) return;  // An end with nothing open: no row, as upstream.
      break;
    }
    case 'i':
    case 'I':
    case 'n':
    case 'R': {
      uint32_t track = track_for(Use::kInstant);
      if (track == kNullU32) break;
      if (phase == 'R') r.args.push_back({s.Intern("legacy_event.phase"), ArgType::kString, s.Intern("R"), 0});
      slice = slices_->Instant(r.ts, track, r.name, std::move(r.args), r.category);
      break;
    }
    case 'X': {
      if (r.legacy_duration_ns < 0) break;
      uint32_t track = track_for(Use::kInstant);
      if (track == kNullU32) break;
      slice = slices_->Complete(r.ts, r.legacy_duration_ns, track, r.name, std::move(r.args), r.category);
      break;
    }
    default:
      // Legacy Chrome phases (async ids, v1 flows, metadata, samples).
      unsupported_events_++;
      return;
  }
  if (slice == kNullU32) {
    parser_errors_++;  // no track: an unresolvable uuid
    return;
  }
  storage_->ExtendBounds(r.ts);
  AddFlows(r, slice);
}

}  // namespace sluice
