// What a page touched again after an idle spell costs, small pages against
// huge ones: the reason the central buffer asks for huge pages on its first
// lap too (service/trace_buffer.cc, TraceBuffer::Create; docs/PERFORMANCE.md,
// "Sluice at rest").
//
//   BM_CopyIntoRingAfterIdle/<huge>/<idle s>  1 MiB memcpy from a warm
//       source into a 4 MiB ring region (anonymous, faulted in and written
//       once before), the next 1 MiB each iteration, after <idle s> seconds
//       asleep (not timed). <huge> 1: MADV_HUGEPAGE on the region, 0: 4 KiB
//       pages. <idle s> 0 is the warm baseline; 60 is about what a recorder
//       at rest leaves between two commits.
//   BM_CommitCopyAfterIdle/<read>/<idle s>  the service's side of a commit
//       at rest: 1 MiB of 32 KiB chunks, just written through one mapping of
//       a memfd (the producer's, not timed), copied into a huge-page ring
//       from the service's own mapping of it through a 32 KiB scratch
//       (<read> 1: ReadChunkUntrusted, then TraceBuffer::CopyChunkUntrusted),
//       from that mapping directly (0: one copy), or by pread(2) of the
//       memfd into the scratch (2: the kernel reads the pages through its
//       own mapping, so the service's is never touched; a syscall a chunk).
//
// On bare metal the four agree within noise. Under a hypervisor that shadows
// the guest's page tables (PVM) and a kernel that ages pages (DAMON), small
// pages idle for a minute fault again, in the host, on their next touch;
// huge ones do not. Three iterations each (3 minutes per idle pair):
//
//   build/bench/page_refault_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr size_t kHugePage = 2u << 20;
constexpr size_t kRegion = 4u << 20;  // TraceBuffer::kFirstLapBytes.
constexpr size_t kCopy = 1u << 20;    // About two readers' chunks at rest.

// A huge-page aligned anonymous region of `bytes`, written once; nullptr on
// failure. `*mapping` is what to munmap, `bytes` + kHugePage long.
uint8_t* MapRegion(size_t bytes, bool huge, void** mapping) {
  *mapping = mmap(nullptr, bytes + kHugePage, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (*mapping == MAP_FAILED) return nullptr;
  auto* region = reinterpret_cast<uint8_t*>(
      (reinterpret_cast<uintptr_t>(*mapping) + kHugePage - 1) & ~(uintptr_t{kHugePage} - 1));
  madvise(region, bytes, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  memset(region, 0, bytes);
  return region;
}

void BM_CopyIntoRingAfterIdle(benchmark::State& state) {
  const bool huge = state.range(0) != 0;
  const auto idle = std::chrono::seconds(state.range(1));
  void* mapping = nullptr;
  uint8_t* region = MapRegion(kRegion, huge, &mapping);
  if (region == nullptr) {
    state.SkipWithError("mmap failed");
    return;
  }
  std::vector<uint8_t> source(kCopy, 0x5a);
  size_t offset = 0;
  for (auto _ : state) {
    std::this_thread::sleep_for(idle);
    const auto start = std::chrono::steady_clock::now();
    memcpy(region + offset, source.data(), kCopy);
    benchmark::ClobberMemory();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    offset = (offset + kCopy) % kRegion;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kCopy));
  munmap(mapping, kRegion + kHugePage);
}
BENCHMARK(BM_CopyIntoRingAfterIdle)
    ->ArgsProduct({{0, 1}, {0, 60}})
    ->ArgNames({"huge", "idle_s"})
    ->Iterations(3)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void BM_CommitCopyAfterIdle(benchmark::State& state) {
  enum Read { kMappingOnce = 0, kMappingViaScratch = 1, kPreadViaScratch = 2 };
  const auto read = static_cast<Read>(state.range(0));
  const auto idle = std::chrono::seconds(state.range(1));
  constexpr size_t kSmb = 8u << 20;  // sluice-probes' default.
  constexpr size_t kChunk = 32u << 10;
  const int fd = memfd_create("page-refault-smb", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, kSmb) != 0) {
    state.SkipWithError("memfd_create failed");
    return;
  }
  auto* producer = static_cast<uint8_t*>(mmap(nullptr, kSmb, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  auto* service = static_cast<uint8_t*>(mmap(nullptr, kSmb, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  void* ring_mapping = nullptr;
  uint8_t* ring = MapRegion(kRegion, /*huge=*/true, &ring_mapping);
  if (producer == MAP_FAILED || service == MAP_FAILED || ring == nullptr) {
    state.SkipWithError("mmap failed");
    close(fd);
    return;
  }
  // A lap of the SMB done: every page written by the producer and read by
  // the service once, so that only the idle spell differs.
  std::vector<uint8_t> scratch(kChunk);
  memset(producer, 0, kSmb);
  for (size_t off = 0; off < kSmb; off += kChunk) memcpy(scratch.data(), service + off, kChunk);
  size_t smb_offset = 0, ring_offset = 0;
  for (auto _ : state) {
    std::this_thread::sleep_for(idle);
    memset(producer + smb_offset, 0x5a, kCopy);  // The producer's chunks.
    const auto start = std::chrono::steady_clock::now();
    for (size_t done = 0; done < kCopy; done += kChunk) {
      const uint8_t* chunk = service + smb_offset + done;
      if (read == kMappingViaScratch) {
        memcpy(scratch.data(), chunk, kChunk);
        chunk = scratch.data();
      } else if (read == kPreadViaScratch) {
        const off_t at = static_cast<off_t>(smb_offset + done);
        if (pread(fd, scratch.data(), kChunk, at) != static_cast<ssize_t>(kChunk)) {
          state.SkipWithError("pread failed");
          break;
        }
        chunk = scratch.data();
      }
      memcpy(ring + ring_offset + done, chunk, kChunk);
    }
    benchmark::ClobberMemory();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    smb_offset = (smb_offset + kCopy) % kSmb;
    ring_offset = (ring_offset + kCopy) % kRegion;
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kCopy));
  munmap(producer, kSmb);
  munmap(service, kSmb);
  munmap(ring_mapping, kRegion + kHugePage);
  close(fd);
}
BENCHMARK(BM_CommitCopyAfterIdle)
    ->ArgsProduct({{1, 0, 2}, {0, 60}})
    ->ArgNames({"read", "idle_s"})
    ->Iterations(3)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
