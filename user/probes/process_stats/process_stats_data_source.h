// linux.process_stats: process and thread names for the trace.
//
// At start (ProcessStatsConfig.scan_all_processes_on_start) it writes one
// ProcessTree packet with every process (pid, ppid, uid, cmdline) and thread
// (tid, tgid, name) in /proc. At every flush and at stop it rescans and writes
// the processes and threads not written before, so that names of pids that
// appear during the trace reach the trace while they are alive. Threads that
// start and end between two flushes are named by the scheduler events
// themselves (sched_switch comms, task_newtask, sched_process_exec), which the
// trace processor also reads.
//
// Not thread-safe: the probes producer calls it from one thread.
#ifndef SLUICE_USER_PROBES_PROCESS_STATS_PROCESS_STATS_DATA_SOURCE_H_
#define SLUICE_USER_PROBES_PROCESS_STATS_PROCESS_STATS_DATA_SOURCE_H_

#include <sys/types.h>

#include <memory>
#include <set>
#include <string>

#include "perfetto/config/process_stats/process_stats_config.pb.h"
#include "shm/trace_writer.h"

namespace sluice {

class ProcessStatsDataSource {
 public:
  ProcessStatsDataSource(const perfetto::protos::ProcessStatsConfig& config,
                         std::unique_ptr<TraceWriter> writer, std::string proc_root = "/proc");
  void Start();
  void Flush();
  void Stop();
  uint64_t processes_written() const { return processes_written_; }
  uint64_t threads_written() const { return threads_written_; }

 private:
  // Writes a ProcessTree packet with what was not written before. Returns the
  // number of new entries.
  size_t ScanAndWriteNew();

  perfetto::protos::ProcessStatsConfig config_;
  std::unique_ptr<TraceWriter> writer_;
  std::string proc_root_;
  std::set<pid_t> seen_processes_;
  std::set<pid_t> seen_threads_;
  uint64_t processes_written_ = 0;
  uint64_t threads_written_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_PROCESS_STATS_PROCESS_STATS_DATA_SOURCE_H_
