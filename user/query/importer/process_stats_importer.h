// ProcessStatsImporter: ProcessStats packets (linux.process_stats polling)
// as Perfetto's trace processor imports them: each counter of a Process
// entry is a counter row, at the packet's timestamp, on a per-process
// counter track named as upstream names it:
//
//   vm_size_kb ... vm_hwm_kb   mem.virt, mem.rss, mem.rss.anon, mem.rss.file,
//                              mem.rss.shmem, mem.swap, mem.locked,
//                              mem.rss.watermark (type process_memory,
//                              dimension process_memory_key), in bytes
//   oom_score_adj              oom_score_adj (its own type, upid only)
//   smr_*_kb                   mem.smaps.rss, .pss, .pss.anon, .pss.file,
//                              .pss.smem, .swap.pss (type smaps), in bytes
//   runtime_*_mode             runtime.user_ns, runtime.kernel_ns (type
//                              proc_stat_runtime), ns as written
//   chrome_*_kb                chrome.private_footprint_kb,
//                              chrome.peak_resident_set_kb (type
//                              chrome_process_stats), in bytes
//
// Every field but the pid names the process (created if unknown, as a new
// process after its pid was freed); an entry with the pid alone names
// nothing. Fields upstream does not know count as proc_stat_unknown_counters,
// and so does chrome_peak_resident_set_kb: upstream's system-probes parser
// counts it there although its Chrome parser imports it (the same count
// here keeps `stats` equal). Not imported: fds (no filedescriptor table)
// and is_peak_rss_resettable (a process arg); both still name the process.
#ifndef SLUICE_USER_QUERY_IMPORTER_PROCESS_STATS_IMPORTER_H_
#define SLUICE_USER_QUERY_IMPORTER_PROCESS_STATS_IMPORTER_H_

#include <cstdint>
#include <string_view>

#include "user/query/importer/process_tracker.h"
#include "user/query/importer/proto_wire_reader.h"
#include "user/query/importer/track_tracker.h"
#include "user/query/storage/trace_storage.h"

namespace sluice {

class ProcessStatsImporter {
 public:
  ProcessStatsImporter(TraceStorage* storage, ProcessTracker* processes, TrackTracker* tracks);
  // One ProcessStats message at `ts`. False if its bytes are malformed
  // (what came before the fault is imported).
  bool Import(std::string_view bytes, int64_t ts);
  int64_t unknown_counters() const { return unknown_counters_; }

 private:
  struct CounterTrack {
    StringId type = kNullStringId, name = kNullStringId, key = kNullStringId, key_value = kNullStringId;
    double scale = 1;
    bool known = false;
  };
  enum class Pass { kChrome, kSystem };
  void ImportProcess(std::string_view bytes, int64_t ts, Pass pass);
  // One field of a Process entry other than pid and threads.
  void ImportCounter(const WireField& field, int64_t pid, int64_t ts);

  TraceStorage* storage_;
  ProcessTracker* processes_;
  TrackTracker* tracks_;
  // By ProcessStats.Process field number.
  CounterTrack counters_[25];
  int64_t unknown_counters_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_PROCESS_STATS_IMPORTER_H_
