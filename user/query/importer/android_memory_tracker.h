// AndroidMemoryTracker: the allocator events of Android kernels, as
// Perfetto's trace processor imports them:
//
//   ion_stat            the global "mem.ion" counter (total_allocated), the
//                       writer's "mem.ion_change" counter (len), and a
//                       "mem.ion_buffer" slice per buffer while it is
//                       allocated, named "<len / 1024> kB"
//   ion_heap_grow,      "mem.ion.<heap>" (the heap's size after the change:
//   ion_heap_shrink     the event has it before) and the writer's
//                       "mem.ion_change.<heap>" (+len or -len)
//   dma_heap_stat       "mem.dma_heap", the writer's "mem.dma_heap_change"
//                       (with the buffer's inode as arg) and a
//                       "mem.dma_buffer" slice per inode
//   cma_alloc_start     begins "mm_cma_alloc" on the thread (5.10+)
//   cma_alloc_info      ends it with the cma_* args (5.10 to 6.0)
//   mm_alloc_contig_migrate_range_info, cma_alloc_finish
//                       6.1+: the migration figures, then the end
//
// The buffer slices go on compressed global tracks (TrackTracker's async
// compression, keyed by buffer id or inode), so buffers alive together get
// tracks of their own. The CMA events depend on the kernel version the
// trace's system_info gives; without one they make nothing, as upstream.
#ifndef SLUICE_USER_QUERY_IMPORTER_ANDROID_MEMORY_TRACKER_H_
#define SLUICE_USER_QUERY_IMPORTER_ANDROID_MEMORY_TRACKER_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "user/query/importer/slice_tracker.h"
#include "user/query/importer/track_tracker.h"
#include "user/query/storage/trace_storage.h"

namespace sluice {

class AndroidMemoryTracker {
 public:
  AndroidMemoryTracker(TraceStorage* storage, TrackTracker* tracks, SliceTracker* slices);
  AndroidMemoryTracker(const AndroidMemoryTracker&) = delete;
  AndroidMemoryTracker& operator=(const AndroidMemoryTracker&) = delete;

  // From system_info's utsname release ("6.1.25-android14").
  void SetKernelVersion(int major, int minor) { kernel_version_ = major * 1000 + minor; }

  // `utid`: the thread that wrote the event.
  void OnIonStat(int64_t ts, uint32_t utid, int64_t buffer_id, int64_t len, int64_t total_allocated);
  // `heap`: the event's heap_name, "unknown" when it has none.
  void OnIonHeapChange(int64_t ts, uint32_t utid, std::string_view heap, int64_t change, int64_t total_before);
  void OnDmaHeapStat(int64_t ts, uint32_t utid, int64_t inode, int64_t len, int64_t total_allocated);

  // One allocation's figures, as the ending event has them.
  struct CmaFigures {
    std::string_view name;
    int64_t pfn = 0;
    int64_t count = 0;
    int64_t nr_migrated = 0, nr_reclaimed = 0, nr_mapped = 0;
    // cma_alloc_info only.
    int64_t err_iso = 0, err_mig = 0, err_test = 0;
  };
  void OnCmaAllocStart(int64_t ts, uint32_t utid);
  void OnMigrateRangeInfo(uint32_t utid, int64_t nr_migrated, int64_t nr_reclaimed, int64_t nr_mapped);
  void OnCmaAllocInfo(int64_t ts, uint32_t utid, const CmaFigures& figures);
  void OnCmaAllocFinish(int64_t ts, uint32_t utid, CmaFigures figures);

 private:
  bool KernelAtLeast(int major, int minor) const { return kernel_version_ && *kernel_version_ >= major * 1000 + minor; }
  void BufferSlice(int64_t ts, StringId type, StringId name, int64_t cookie, int64_t len);
  uint32_t GlobalCounter(StringId type, StringId name, StringId heap);
  void EndCma(int64_t ts, uint32_t utid, const CmaFigures& figures, bool with_errors);

  TraceStorage* storage_;
  TrackTracker* tracks_;
  SliceTracker* slices_;
  std::optional<int> kernel_version_;  // major * 1000 + minor
  struct Migration {
    int64_t nr_migrated = 0, nr_reclaimed = 0, nr_mapped = 0;
  };
  std::unordered_map<uint32_t, Migration> migration_;  // utid -> the allocation's, 6.1+
  StringId ion_type_, ion_change_type_, ion_, ion_change_, heap_name_key_, ion_buffers_type_, ion_buffer_;
  StringId dma_heap_type_, dma_heap_, dma_heap_change_type_, dma_heap_change_, inode_key_, dma_buffers_type_,
      dma_buffer_;
  StringId cma_alloc_;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_ANDROID_MEMORY_TRACKER_H_
