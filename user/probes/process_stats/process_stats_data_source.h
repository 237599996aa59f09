// linux.process_stats: process and thread names for the trace, and with
// proc_stats_poll_ms, every process's memory counters at that period.
//
// At start (ProcessStatsConfig.scan_all_processes_on_start) it writes one
// ProcessTree packet with every process (pid, ppid, uid, cmdline) and thread
// (tid, tgid, name) in /proc. At every flush and at stop it writes the
// processes and threads not written before, so that names of pids that
// appear during the trace reach the trace while they are alive. Threads that
// start and end between two flushes are named by the scheduler events
// themselves (sched_switch comms, task_newtask, sched_process_exec), which the
// trace processor also reads.
//
// What a flush costs. A scan of /proc reads a directory per process (its
// task/ list): about a millisecond of CPU per flush on a quiet server, paid
// every second of a streaming session. But what is new since the last scan
// has a pid the kernel allocated since, and it allocates them in turn (a
// thread takes one too): the last one it handed out is the 5th field of
// /proc/loadavg. So a flush reads that first, with one pread of the file it
// keeps open (it was also read just before the last scan):
//   - unchanged: nothing was created, nothing to read;
//   - up to kMaxPidsToProbe more: it looks up /proc/<pid>/status of those
//     pids alone (a thread's /proc/<tid> exists, though readdir skips it);
//   - more, wrapped around pid_max, or unreadable: a full scan.
// loadavg speaks of the reader's pid namespace: the shortcuts are used only
// where /proc lists that namespace (its /proc/self is our pid).
//
// Polling (ProcessStatsConfig.proc_stats_poll_ms > 0, at least 100 ms, as
// upstream clamps it): a thread of this source polls at start, then wakes at
// each multiple of the period (of CLOCK_REALTIME, so that two sources poll at the same instants)
// and writes one ProcessStats packet: for every process with memory (kernel
// threads have none and are not read again) VmSize, VmRSS, RssAnon, RssFile,
// RssShmem, VmSwap, VmLck, VmHWM and oom_score_adj; with
// record_process_runtime its user and kernel CPU time; with scan_smaps_rollup
// the smaps_rollup sizes. A value equal to the one written for that pid
// since the cache was last cleared is left out (the trace holds the last
// one); the cache is cleared every proc_stats_cache_ttl_ms (every poll when
// 0). Then the processes new since the last poll get their ProcessTree entry.
//
// Threads: Start, Flush and Stop come from one thread (the probes
// producer's); mutex_ serializes them with the poll thread, since both
// write through writer_ and read the seen-pid sets.
#ifndef SLUICE_USER_PROBES_PROCESS_STATS_PROCESS_STATS_DATA_SOURCE_H_
#define SLUICE_USER_PROBES_PROCESS_STATS_PROCESS_STATS_DATA_SOURCE_H_

#include <sys/types.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "perfetto/config/process_stats/process_stats_config.pb.h"
#include "shm/base/scoped_fd.h"
#include "shm/trace_writer.h"
#include "user/probes/process_stats/proc_memory_counters.h"

namespace sluice {

class ProcessStatsDataSource {
 public:
  ProcessStatsDataSource(const perfetto::protos::ProcessStatsConfig& config,
                         std::unique_ptr<TraceWriter> writer, std::string proc_root = "/proc");
  ~ProcessStatsDataSource();
  void Start();
  void Flush();
  void Stop();
  // Forgets what was written and writes every process and thread again, with
  // their counters at the next poll (ClearIncrementalState: a trace file that
  // starts here gets a whole process tree).
  void WriteAllAgain();
  uint64_t processes_written() const { return processes_written_; }
  uint64_t threads_written() const { return threads_written_; }
  // Flushes and stops that found no new pid and did not scan.
  uint64_t scans_skipped() const { return scans_skipped_; }
  // Pids looked up one by one instead of a scan (ProbeAndWriteNew).
  uint64_t pids_probed() const { return pids_probed_; }
  // ProcessStats packets written by polling.
  uint64_t polls() const;
  // One poll now, as the poll thread does at each period (tests call it
  // without the thread: a config without proc_stats_poll_ms).
  void PollNow();
  // The poll period after clamping; 0 = no polling.
  uint32_t poll_period_ms() const { return poll_period_ms_; }
  static constexpr uint32_t kMinPollPeriodMs = 100;
  // At most this many new pids are looked up one by one; more, and the
  // flush scans /proc.
  static constexpr long kMaxPidsToProbe = 256;

 private:
  // Writes a ProcessTree packet with what /proc lists that was not written
  // before.
  void ScanAndWriteNew();
  // The same for the pids first..last alone: what was created since the
  // last scan, when the kernel allocated only a few pids since (cheaper
  // than a scan's directory per process).
  void ProbeAndWriteNew(pid_t first, pid_t last);
  // `kthread`: status's Kthread line (Linux 6.4+), -1 if absent.
  void WriteProcess(ProtoWriter* tree, pid_t pid, pid_t ppid, int uid, const std::string& comm,
                    const std::string& dir, int kthread);
  void WriteThread(ProtoWriter* tree, pid_t tid, pid_t tgid, const std::string& name);
  bool records_threads() const;
  // The last pid the kernel allocated (/proc/loadavg), or -1 if unreadable.
  long ReadLastPid();
  // Flush()'s work, with mutex_ held.
  void WriteNewProcessesLocked();
  void PollLocked();
  // Adds `pid`'s counters that differ from the cache to `stats` (a
  // ProcessStats message). False: the pid has no memory counters.
  bool WriteCountersLocked(ProtoWriter* stats, pid_t pid);
  void PollThread();

  perfetto::protos::ProcessStatsConfig config_;
  uint32_t poll_period_ms_ = 0;
  // Polls between cache clears (>= 1).
  uint32_t cache_ttl_polls_ = 1;

  mutable std::mutex mutex_;
  std::condition_variable stop_cv_;  // Wakes the poll thread to stop.
  bool stopping_ = false;
  std::thread poll_thread_;
  // What was written per pid since the cache was cleared, and pids found to
  // have no memory counters (kernel threads).
  std::map<pid_t, ProcMemoryCounters> written_counters_;
  std::set<pid_t> pids_without_memory_;
  uint32_t polls_since_cache_clear_ = 0;
  uint64_t polls_ = 0;
  long ticks_per_second_ = 100;

  std::unique_ptr<TraceWriter> writer_;
  std::string proc_root_;
  // <proc_root_>/loadavg, built once: a flush that finds nothing new does
  // no more than pread it. Open from the first ReadLastPid() on.
  const std::string loadavg_path_;
  ScopedFd loadavg_;
  std::set<pid_t> seen_processes_;
  std::set<pid_t> seen_threads_;
  // ReadLastPid() before the last scan; -1: none yet, or unreadable.
  long last_pid_at_scan_ = -1;
  // /proc lists our pid namespace, so ReadLastPid() speaks of its pids.
  bool proc_is_our_pid_namespace_ = false;
  uint64_t processes_written_ = 0;
  uint64_t threads_written_ = 0;
  uint64_t scans_skipped_ = 0;
  uint64_t pids_probed_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_PROCESS_STATS_PROCESS_STATS_DATA_SOURCE_H_
