// EventSorter: puts ftrace events back into timestamp order before the
// trackers see them, in bounded memory.
//
// A trace holds each stream's events in order (a stream: one CPU's bundles
// on one producer sequence, e.g. the ftrace source's CPU 2, or the BPF
// source's CPU 2), but streams interleave with a lag: each CPU's buffer is
// drained in turn, sources flush at their own pace, and the service hands
// out one sequence's chunks at a time. The sorter keeps one queue per stream
// and releases the earliest head among them while every live stream has
// something queued (nothing earlier can still come from it). A stream is
// live while its newest event is within the window of the newest event of
// all; a quiet stream stops holding the others back once it falls out of
// the window. The head is also released when it is older than the newest
// event by more than the window, or when more than max_pending events wait.
// An event that arrives after later ones were released (a stream that
// first shows up late, or lags more than the window) is counted
// (sorter_push_event_out_of_order in `stats`) and processed at once, never
// dropped.
//
// Allocation-free on the hot path: events are small PODs in per-stream
// queues, and ftrace event bytes stay in the packet they came in (one
// refcounted copy per packet, not per event).
#ifndef SLUICE_USER_QUERY_IMPORTER_EVENT_SORTER_H_
#define SLUICE_USER_QUERY_IMPORTER_EVENT_SORTER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "user/query/storage/string_pool.h"

namespace sluice {

struct SortedEvent {
  // kProcessTree: a process_tree packet, sorted in at its packet timestamp
  // as Perfetto does (a scan describes the tasks alive at that time).
  // kProcessStats, kPerfSample, kSysStats, kTrigger, kCloneTrigger,
  // kBattery, kInitialDisplayState: those packets' payloads, likewise.
  enum Kind : uint8_t {
    kFtrace, kCompactSwitch, kCompactWaking, kProcessTree, kProcessStats, kPerfSample, kSysStats, kTrigger,
    kCloneTrigger, kBattery, kInitialDisplayState, kTrackEvent
  };
  // kTrackEvent: no bytes; `offset` is the TrackEventImporter's record slot.
  bool has_bytes() const { return kind != kCompactSwitch && kind != kCompactWaking && kind != kTrackEvent; }
  int64_t ts = 0;
  uint32_t cpu = 0;
  uint32_t sequence = 0;  // trusted_packet_sequence_id: with cpu, the stream.
  Kind kind = kFtrace;
  // The `machine` row of the packet it came in (0: the host); its pids and
  // tids are that machine's. cpu is already the machine's ucpu.
  uint16_t machine = 0;
  // kFtrace / kProcessTree: the FtraceEvent's / ProcessTree's bytes, in
  // packet block `block`.
  uint32_t block = 0;
  uint32_t offset = 0;
  uint32_t size = 0;
  // kCompactSwitch: prev_state, next pid/prio/comm.
  // kCompactWaking: pid, prio, comm, target_cpu, common_flags.
  // kFtrace sched_blocked_reason: comm is its caller's interned symbol.
  int64_t prev_state = 0;
  int32_t pid = 0;
  int32_t prio = 0;
  int32_t target_cpu = 0;
  uint32_t common_flags = 0;
  StringId comm = kNullStringId;
};

class EventSorter {
 public:
  // `sink` gets every event in order, with the bytes of kFtrace and
  // kProcessTree events.
  using Sink = std::function<void(const SortedEvent& event, std::string_view bytes)>;
  EventSorter(int64_t window_ns, size_t max_pending, Sink sink);

  // Copies `packet` (the bytes kFtrace events point into) and returns its
  // block id for Push. The caller holds one reference until ReleaseBlock,
  // so events emitted while it still pushes cannot free the block.
  uint32_t AddBlock(std::string_view packet);
  void ReleaseBlock(uint32_t block);
  void Push(const SortedEvent& event);
  // Releases what can be released (call after each packet).
  void Drain() { Release(false); }
  // End of trace: releases everything.
  void Flush() { Release(true); }

  uint64_t out_of_order() const { return out_of_order_; }
  size_t max_pending_seen() const { return max_pending_seen_; }

 private:
  void Release(bool all);
  void Emit(const SortedEvent& event);

  int64_t window_ns_;
  size_t max_pending_;
  Sink sink_;
  struct Stream {
    std::deque<SortedEvent> queue;
    int64_t newest_ts = INT64_MIN;
  };
  std::vector<Stream> streams_;
  std::unordered_map<uint64_t, uint32_t> stream_by_key_;  // sequence << 32 | cpu
  struct Block {
    std::string bytes;
    uint32_t refs = 0;
  };
  std::vector<Block> blocks_;
  std::vector<uint32_t> free_blocks_;
  size_t pending_ = 0;
  size_t max_pending_seen_ = 0;
  int64_t newest_ts_ = INT64_MIN;
  int64_t oldest_ts_ = INT64_MAX;  // Of all pushed events: the warm-up's start.
  int64_t released_ts_ = INT64_MIN;
  uint64_t out_of_order_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_EVENT_SORTER_H_
