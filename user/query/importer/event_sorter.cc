#include "user/query/importer/event_sorter.h"

#include <algorithm>

namespace sluice {

EventSorter::EventSorter(int64_t window_ns, size_t max_pending, Sink sink)
    : window_ns_(window_ns), max_pending_(max_pending), sink_(std::move(sink)) {}

uint32_t EventSorter::AddBlock(std::string_view packet) {
  uint32_t id;
  if (!free_blocks_.empty()) {
    id = free_blocks_.back();
    free_blocks_.pop_back();
  } else {
    id = static_cast<uint32_t>(blocks_.size());
    blocks_.emplace_back();
  }
  blocks_[id].bytes.assign(packet);
  blocks_[id].refs = 1;
  return id;
}

void EventSorter::ReleaseBlock(uint32_t id) {
  Block& block = blocks_[id];
  if (--block.refs) return;
  block.bytes.clear();  // Keeps its capacity for the next packet.
  free_blocks_.push_back(id);
}

void EventSorter::Emit(const SortedEvent& event) {
  std::string_view bytes;
  if (event.has_bytes()) {
    Block& block = blocks_[event.block];
    bytes = std::string_view(block.bytes).substr(event.offset, event.size);
    sink_(event, bytes);
    ReleaseBlock(event.block);
    return;
  }
  sink_(event, bytes);
}

void EventSorter::Push(const SortedEvent& event) {
  if (event.has_bytes()) blocks_[event.block].refs++;
  if (event.ts < released_ts_) {
    // Later events were already handed on: too late to sort this one in.
    out_of_order_++;
    Emit(event);
    return;
  }
  uint64_t key = (static_cast<uint64_t>(event.sequence) << 32) | event.cpu;
  auto [it, inserted] = stream_by_key_.try_emplace(key, static_cast<uint32_t>(streams_.size()));
  if (inserted) streams_.emplace_back();
  Stream& stream = streams_[it->second];
  auto& queue = stream.queue;
  if (queue.empty() || queue.back().ts <= event.ts) {
    queue.push_back(event);
  } else {
    // Out of order within one stream (compact wakings after switches of the
    // same bundle): insert in place, after equal timestamps.
    auto at = std::upper_bound(queue.begin(), queue.end(), event.ts,
                               [](int64_t ts, const SortedEvent& e) { return ts < e.ts; });
    queue.insert(at, event);
  }
  stream.newest_ts = std::max(stream.newest_ts, event.ts);
  newest_ts_ = std::max(newest_ts_, event.ts);
  oldest_ts_ = std::min(oldest_ts_, event.ts);
  pending_++;
  max_pending_seen_ = std::max(max_pending_seen_, pending_);
}

namespace {

// ts - window without signed overflow (timestamps come from the trace:
// any 64-bit value), saturating at the smallest timestamp.
int64_t WindowStart(int64_t ts, int64_t window) {
  int64_t start;
  return __builtin_sub_overflow(ts, window, &start) ? INT64_MIN : start;
}

}  // namespace

void EventSorter::Release(bool all) {
  const int64_t window_start = WindowStart(newest_ts_, window_ns_);
  // Past the warm-up: the newest event is more than a window after the
  // oldest (unsigned difference: no overflow for any pair, newest >= oldest).
  const bool warmed_up = oldest_ts_ <= newest_ts_ &&
                         static_cast<uint64_t>(newest_ts_) - static_cast<uint64_t>(oldest_ts_) >
                             static_cast<uint64_t>(window_ns_);
  for (;;) {
    Stream* earliest = nullptr;
    bool every_live_stream_has_events = warmed_up;
    for (Stream& stream : streams_) {
      if (stream.queue.empty()) {
        if (stream.newest_ts >= window_start) every_live_stream_has_events = false;
        continue;
      }
      if (!earliest || stream.queue.front().ts < earliest->queue.front().ts) earliest = &stream;
    }
    if (!earliest) return;
    const SortedEvent& head = earliest->queue.front();
    bool outside_window = head.ts < window_start;
    if (!all && !every_live_stream_has_events && !outside_window && pending_ <= max_pending_) return;
    SortedEvent event = head;
    earliest->queue.pop_front();
    pending_--;
    released_ts_ = std::max(released_ts_, event.ts);
    Emit(event);
  }
}

}  // namespace sluice
