// BpfLoader: the lifecycle of the sluice BPF object (build/bpf/
// sluice_events.skel.h, from bpf/*.bpf.c) on the running kernel.
//
//   Load():  preflight   BTF present (CONFIG_DEBUG_INFO_BTF), CAP_BPF +
//                        CAP_PERFMON (or CAP_SYS_ADMIN)
//            open        skeleton
//            choose      per event: tp_btf if the kernel can load a
//                        BTF-typed raw tracepoint and has btf_trace_<name>,
//                        else the classic tracepoint if tracefs has it, else
//                        skip it with one warning; trace_marker: fentry on
//                        vfs_write if a probe program can be loaded *and
//                        attached* and the kernel is not PREEMPT_RT, else
//                        syscalls/sys_enter_write.
//                        The programs not chosen get autoload = false.
//            settings    rodata (filters, wake-up threshold, marker files,
//                        sched_switch argument count), map sizes, rings
//            load        verifier; on rejection, one line plus the tail of
//                        the verifier log (libbpf's print output at
//                        LIBBPF_WARN, captured; debug output only with
//                        `verbose`)
//            fill maps   pid/tgid filter, per-CPU rings into sluice_rings
//   Attach():            attach each chosen program; one that fails is
//                        skipped with a warning unless none is left
//   Detach():            destroy the links (programs stop firing)
//   ~BpfLoader():        detach, free the object, close the rings
//
// Rings. Per-CPU mode: one BPF_MAP_TYPE_RINGBUF per online CPU, created here
// and stored at index = CPU id in the BPF_MAP_TYPE_ARRAY_OF_MAPS sluice_rings
// (whose size is the number of possible CPUs; a CPU without a ring counts
// its records as dropped). Shared mode: the one map sluice_ring. The ring
// fds are for libbpf's ring_buffer (user/probes/bpf/bpf_data_source.cc).
//
// Thread-safety: Load/Attach/Detach/destruction from one thread;
// ReadCounters() and ReadRunStats() from any (they are map/prog syscalls).
#ifndef SLUICE_USER_PROBES_BPF_BPF_LOADER_H_
#define SLUICE_USER_PROBES_BPF_BPF_LOADER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shm/base/scoped_fd.h"
#include "shm/base/status.h"
#include "user/probes/bpf/bpf_marker_files.h"
#include "user/probes/bpf/bpf_settings.h"

extern "C" {
#include "bpf/sluice_record.h"  // struct sluice_cpu_stats
}

struct sluice_events;     // build/bpf/sluice_events.skel.h
struct bpf_link;
struct bpf_prog_info;     // <linux/bpf.h>
struct btf;               // <bpf/btf.h>

namespace sluice {

struct BpfLoaderOptions {
  bool shared_ring = false;
  // Wake the reader when a ring's unread bytes cross this percentage of the
  // ring; 0 = the kernel's default (a wake-up whenever the reader caught up).
  uint32_t wakeup_fill_percent = 25;
  // Use the classic tracepoint programs even where tp_btf works (tests).
  bool force_tracepoint = false;
  // Do not probe fentry; use sys_enter_write for trace_marker (tests).
  bool force_marker_tracepoint = false;
  // Use fentry for trace_marker even on PREEMPT_RT kernels, where fentry
  // programs run preemptibly and the kernel skips (and counts as recursion
  // misses) an invocation that finds the program busy on its CPU.
  bool fentry_on_rt = false;
  // Forward libbpf's debug output to stderr.
  bool verbose = false;
  // Count program run time (BPF_ENABLE_STATS) while loaded: benchmarks.
  bool enable_run_time_stats = false;
  std::vector<BpfMarkerFile> marker_files;
  // Where tracefs is, for the tracepoint existence checks ("" = find).
  std::string tracefs_root;
  // One-line warnings (skipped events, fallbacks).
  std::function<void(const std::string&)> warn;
};

// How the programs attached on this kernel.
struct BpfAttachInfo {
  std::string tracepoint_attach;  // "tp_btf" | "tracepoint" | "" (none)
  std::string marker_attach;      // "fentry" | "sys_enter_write" | "" (none)
  std::vector<BpfEvent> events;   // attached
  std::vector<std::string> skipped;  // "group/name: reason"
};

class BpfLoader {
 public:
  static StatusOr<std::unique_ptr<BpfLoader>> Load(const BpfSettings& settings,
                                                   const BpfLoaderOptions& options);
  ~BpfLoader();
  BpfLoader(const BpfLoader&) = delete;
  BpfLoader& operator=(const BpfLoader&) = delete;

  Status Attach();
  void Detach();

  // Possible CPUs: the size of the per-CPU maps.
  uint32_t num_cpus() const { return num_cpus_; }
  bool shared_ring() const { return shared_ring_; }
  // Per-CPU mode: fd of CPU i's ring or -1. Shared mode: one fd.
  const std::vector<int>& ring_fds() const { return ring_fds_; }
  // CPUs online at load time (index = CPU): the ones with a ring (per-CPU
  // mode) and the ones whose records the reader expects.
  const std::vector<bool>& online_cpus() const { return online_; }
  const BpfAttachInfo& info() const { return info_; }

  // Per-CPU counters of the programs (index = CPU), the kernel's struct as
  // the map holds it. Thread-safe.
  Status ReadCounters(std::vector<sluice_cpu_stats>* out) const;
  // Summed run time and run count of the attached programs (needs
  // enable_run_time_stats). Thread-safe.
  Status ReadRunStats(uint64_t* run_time_ns, uint64_t* run_count) const;
  // Summed recursion misses of the loaded programs: invocations the kernel
  // skipped because the same program was already running on that CPU (on
  // PREEMPT_RT an fentry program can be preempted by another task that
  // enters it). Events lost before any counter of ours saw them. Thread-safe.
  Status ReadMisses(uint64_t* misses) const;

 private:
  BpfLoader() = default;
  // Calls `visit` with the kernel's info of each loaded program.
  Status ForEachProgramInfo(const std::function<void(const bpf_prog_info&)>& visit) const;
  Status Open(const BpfSettings& settings, const BpfLoaderOptions& options);
  // Open()'s steps, in its order (see Open() for the lifecycle).
  void ChooseEventPrograms(const BpfSettings& settings, const BpfLoaderOptions& options,
                           const btf* vmlinux, const std::string& tracefs);
  void ChooseMarkerProgram(const BpfLoaderOptions& options, const btf* vmlinux,
                           const std::string& tracefs);
  void SetRodata(const BpfSettings& settings, const BpfLoaderOptions& options,
                 const btf* vmlinux);
  Status SizeMaps(const BpfSettings& settings);
  Status FillTaskFilter(const BpfSettings& settings);
  Status CreateRings(const BpfSettings& settings);

  sluice_events* skel_ = nullptr;
  uint32_t num_cpus_ = 0;
  bool shared_ring_ = false;
  std::vector<int> ring_fds_;
  // Per-CPU mode: the rings ring_fds_ names (shared mode's one is the
  // skeleton's). Like the fds below, closed after the destructor destroys
  // the skeleton.
  std::vector<ScopedFd> owned_rings_;
  std::vector<bool> online_;
  ScopedFd template_ring_fd_;
  ScopedFd stats_fd_;
  std::vector<bpf_link*> links_;
  BpfAttachInfo info_;
  std::function<void(const std::string&)> warn_;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_BPF_BPF_LOADER_H_
