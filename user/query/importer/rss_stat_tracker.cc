#include "user/query/importer/rss_stat_tracker.h"

namespace sluice {
namespace {

std::string_view MemoryKey(int64_t member) {
  switch (member) {
    case 0: return "rss.file";
    case 1: return "rss.anon";
    case 2: return "swap";
    case 3: return "rss.shmem";
    case 4: return "unreclaimable";
    default: return "unknown";
  }
}

}  // namespace

std::optional<RssStatTracker::Sample> RssStatTracker::OnRssStat(int64_t pid, int64_t member, int64_t size,
                                                                std::optional<bool> curr,
                                                                std::optional<int64_t> mm_id) {
  if (size < 0) {
    negative_size_++;
    return std::nullopt;
  }
  const std::string_view key = MemoryKey(member);
  if (!curr || !mm_id) return Sample{processes_->GetOrCreateThread(pid), key};
  if (*curr) {
    const uint32_t utid = processes_->GetOrCreateThread(pid);
    owner_of_mm_[*mm_id] = utid;
    return Sample{utid, key};
  }
  auto it = owner_of_mm_.find(*mm_id);
  if (it != owner_of_mm_.end() && !processes_->IsThreadAlive(it->second)) {
    owner_of_mm_.erase(it);  // Its owner is gone; the mm may be reused.
    it = owner_of_mm_.end();
  }
  if (it == owner_of_mm_.end()) {
    unknown_thread_for_mm_id_++;
    return std::nullopt;
  }
  return Sample{it->second, key};
}

}  // namespace sluice
