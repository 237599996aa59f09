// RssStatTracker: whose memory a kmem/rss_stat event (or Android's
// synthetic rss_stat_throttled) counts, as upstream's trace processor
// decides it.
//
// The event fires in the task that changed the counter, which is not always
// the mm's owner (a process reading another's memory, an exiting task whose
// current->mm is already cleared). So:
//   - curr != 0: the event's own thread owns mm_id; remembered.
//   - curr == 0: the thread last seen owning mm_id, if it is still alive;
//     none otherwise (the mm may be reused by a process not seen yet), and
//     the event is counted in rss_stat_unknown_thread_for_mm_id.
//   - no curr or no mm_id (kernels before 5.x): the event's own thread.
// member names the counter: 0 rss.file, 1 rss.anon, 2 swap, 3 rss.shmem,
// 4 unreclaimable, anything else "unknown"; a negative size is dropped
// (rss_stat_negative_size). The importer puts the value on the owner's
// process_memory track "mem.<key>" once the thread's process is known (at
// the end, as oom_score_adj).
#ifndef SLUICE_USER_QUERY_IMPORTER_RSS_STAT_TRACKER_H_
#define SLUICE_USER_QUERY_IMPORTER_RSS_STAT_TRACKER_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "user/query/importer/process_tracker.h"

namespace sluice {

class RssStatTracker {
 public:
  explicit RssStatTracker(ProcessTracker* processes) : processes_(processes) {}

  struct Sample {
    uint32_t utid;
    std::string_view memory_key;  // the process_memory_key dimension
  };
  // nullopt: dropped (and counted).
  std::optional<Sample> OnRssStat(int64_t pid, int64_t member, int64_t size, std::optional<bool> curr,
                                  std::optional<int64_t> mm_id);

  int64_t negative_size() const { return negative_size_; }
  int64_t unknown_thread_for_mm_id() const { return unknown_thread_for_mm_id_; }

 private:
  ProcessTracker* processes_;
  std::unordered_map<int64_t, uint32_t> owner_of_mm_;  // mm_id -> utid
  int64_t negative_size_ = 0;
  int64_t unknown_thread_for_mm_id_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_RSS_STAT_TRACKER_H_
