#include "user/query/importer/android_memory_tracker.h"

#include <string>
#include <vector>

namespace sluice {

AndroidMemoryTracker::AndroidMemoryTracker(TraceStorage* storage, TrackTracker* tracks, SliceTracker* slices)
    : storage_(storage), tracks_(tracks), slices_(slices) {
  StringPool& s = storage->strings;
  ion_type_ = s.Intern("ion");
  ion_ = s.Intern("mem.ion");
  ion_change_ = s.Intern("mem.ion_change");
  ion_change_type_ = s.Intern("ion_change");
  heap_name_key_ = s.Intern("heap_name");
  ion_buffers_type_ = s.Intern("android_ion_allocations");
  ion_buffer_ = s.Intern("mem.ion_buffer");
  dma_heap_type_ = s.Intern("android_dma_heap");
  dma_heap_ = s.Intern("mem.dma_heap");
  dma_heap_change_type_ = s.Intern("android_dma_heap_change");
  dma_heap_change_ = s.Intern("mem.dma_heap_change");
  inode_key_ = s.Intern("inode");
  dma_buffers_type_ = s.Intern("android_dma_allocations");
  dma_buffer_ = s.Intern("mem.dma_buffer");
  cma_alloc_ = s.Intern("mm_cma_alloc");
}

uint32_t AndroidMemoryTracker::GlobalCounter(StringId type, StringId name, StringId heap) {
  return tracks_->DimensionsTrack(type, name, /*counter=*/true, {{heap_name_key_, ArgType::kString, heap, 0}});
}

// A buffer's life: a positive len allocates it (a slice named by its size
// begins), any other frees it (the buffer's slice ends).
void AndroidMemoryTracker::BufferSlice(int64_t ts, StringId type, StringId name, int64_t cookie, int64_t len) {
  if (len > 0) {
    const uint32_t track = tracks_->AsyncBegin(type, kNullU32, name, cookie, TrackTracker::Nesting::kNestable);
    slices_->Begin(ts, track, storage_->strings.Intern(std::to_string(len / 1024) + " kB"));
  } else {
    slices_->End(ts, tracks_->AsyncEnd(type, kNullU32, name, cookie));
  }
}

void AndroidMemoryTracker::OnIonStat(int64_t ts, uint32_t utid, int64_t buffer_id, int64_t len,
                                     int64_t total_allocated) {
  const StringId no_heap = kNullStringId;  // ion_stat names no heap: a NULL dimension, as upstream
  storage_->counter.Add(ts, GlobalCounter(ion_type_, ion_, no_heap), static_cast<double>(total_allocated));
  storage_->counter.Add(ts, tracks_->ThreadCounterTrack(ion_change_type_, ion_change_, utid, heap_name_key_, no_heap),
                        static_cast<double>(len));
  BufferSlice(ts, ion_buffers_type_, ion_buffer_, buffer_id, len);
}

void AndroidMemoryTracker::OnIonHeapChange(int64_t ts, uint32_t utid, std::string_view heap, int64_t change,
                                           int64_t total_before) {
  StringPool& s = storage_->strings;
  const StringId heap_id = heap.empty() ? kNullStringId : s.Intern(heap);
  const std::string suffix = heap.empty() ? "" : "." + std::string(heap);
  storage_->counter.Add(ts, GlobalCounter(ion_type_, s.Intern("mem.ion" + suffix), heap_id),
                        static_cast<double>(total_before + change));
  storage_->counter.Add(
      ts, tracks_->ThreadCounterTrack(ion_change_type_, s.Intern("mem.ion_change" + suffix), utid, heap_name_key_, heap_id),
      static_cast<double>(change));
}

void AndroidMemoryTracker::OnDmaHeapStat(int64_t ts, uint32_t utid, int64_t inode, int64_t len,
                                         int64_t total_allocated) {
  storage_->counter.Add(ts, tracks_->SingletonTrack(dma_heap_type_, dma_heap_, /*counter=*/true),
                        static_cast<double>(total_allocated));
  std::vector<Arg> args = {{inode_key_, ArgType::kUint, inode, 0}};
  storage_->counter.Add(ts, tracks_->ThreadCounterTrack(dma_heap_change_type_, dma_heap_change_, utid),
                        static_cast<double>(len), storage_->args.Add(&args));
  BufferSlice(ts, dma_buffers_type_, dma_buffer_, inode, len);
}

void AndroidMemoryTracker::OnCmaAllocStart(int64_t ts, uint32_t utid) {
  if (!KernelAtLeast(5, 10)) return;  // No event ends it before 5.10.
  // A fresh allocation forgets figures an unended one left.
  if (KernelAtLeast(6, 1)) migration_[utid] = {};
  slices_->Begin(ts, tracks_->ThreadTrack(utid), cma_alloc_);
}

void AndroidMemoryTracker::OnMigrateRangeInfo(uint32_t utid, int64_t nr_migrated, int64_t nr_reclaimed,
                                              int64_t nr_mapped) {
  if (!KernelAtLeast(6, 1)) return;
  migration_[utid] = {nr_migrated, nr_reclaimed, nr_mapped};
}

void AndroidMemoryTracker::OnCmaAllocInfo(int64_t ts, uint32_t utid, const CmaFigures& figures) {
  if (!KernelAtLeast(5, 10) || KernelAtLeast(6, 1)) return;
  EndCma(ts, utid, figures, /*with_errors=*/true);
}

void AndroidMemoryTracker::OnCmaAllocFinish(int64_t ts, uint32_t utid, CmaFigures figures) {
  if (!KernelAtLeast(6, 1)) return;
  auto it = migration_.find(utid);
  const Migration m = it == migration_.end() ? Migration{} : it->second;
  figures.nr_migrated = m.nr_migrated, figures.nr_reclaimed = m.nr_reclaimed, figures.nr_mapped = m.nr_mapped;
  EndCma(ts, utid, figures, /*with_errors=*/false);
}

void AndroidMemoryTracker::EndCma(int64_t ts, uint32_t utid, const CmaFigures& f, bool with_errors) {
  StringPool& s = storage_->strings;
  std::vector<Arg> args = {{s.Intern("cma_name"), ArgType::kString, s.Intern(f.name), 0},
                           {s.Intern("cma_pfn"), ArgType::kUint, f.pfn, 0},
                           {s.Intern("cma_req_pages"), ArgType::kUint, f.count, 0},
                           {s.Intern("cma_nr_migrated"), ArgType::kUint, f.nr_migrated, 0},
                           {s.Intern("cma_nr_reclaimed"), ArgType::kUint, f.nr_reclaimed, 0},
                           {s.Intern("cma_nr_mapped"), ArgType::kUint, f.nr_mapped, 0}};
  if (with_errors) {
    args.push_back({s.Intern("cma_nr_isolate_fail"), ArgType::kUint, f.err_iso, 0});
    args.push_back({s.Intern("cma_nr_migrate_fail"), ArgType::kUint, f.err_mig, 0});
    args.push_back({s.Intern("cma_nr_test_fail"), ArgType::kUint, f.err_test, 0});
  }
  slices_->End(ts, tracks_->ThreadTrack(utid), std::move(args));
}

}  // namespace sluice
