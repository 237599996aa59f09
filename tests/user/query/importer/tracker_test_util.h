// Test helpers for ProcessTracker and SchedTracker: a TrackerFeeder that
// feeds events the way the importer does (GetOrCreateThread of the common pid
// before every ftrace event except sched_switch, as Perfetto's raw-table
// path does), and renderers that print the tables as trace_processor_shell
// -q prints CSV, so expected rows can be pasted from its output.
#ifndef SLUICE_TESTS_USER_QUERY_IMPORTER_TRACKER_TEST_UTIL_H_
#define SLUICE_TESTS_USER_QUERY_IMPORTER_TRACKER_TEST_UTIL_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "user/query/importer/process_tracker.h"
#include "user/query/importer/sched_tracker.h"
#include "user/query/storage/trace_storage.h"

namespace sluice {

class TrackerFeeder {
 public:
  TrackerFeeder() : processes(&storage), sched(&storage, &processes) {}

  void Switch(int64_t ts, uint32_t cpu, int64_t prev_pid, std::string_view prev_comm,
              int32_t prev_prio, int64_t prev_state, int64_t next_pid,
              std::string_view next_comm, int32_t next_prio) {
    sched.OnSwitch(ts, cpu, prev_pid, prev_comm, prev_prio, prev_state, next_pid, next_comm,
                   next_prio);
  }
  void Waking(int64_t ts, int64_t common_pid, int64_t pid, std::string_view comm) {
    processes.GetOrCreateThread(common_pid);
    sched.OnWaking(ts, common_pid, pid, comm);
  }
  void Newtask(int64_t ts, int64_t common_pid, int64_t pid, std::string_view comm,
               uint64_t clone_flags) {
    processes.GetOrCreateThread(common_pid);
    sched.OnTaskNewtask(ts, common_pid, pid, comm, clone_flags);
  }
  void Rename(int64_t common_pid, int64_t pid, std::string_view newcomm) {
    processes.GetOrCreateThread(common_pid);
    processes.OnTaskRename(pid, newcomm);
  }
  void Free(int64_t ts, int64_t common_pid, int64_t pid) {
    processes.GetOrCreateThread(common_pid);
    processes.OnProcessFree(ts, pid);
  }
  void TreeProcess(int64_t pid, int64_t ppid, std::initializer_list<std::string_view> argv,
                   bool cmdline_is_comm, int64_t uid) {
    processes.OnProcessTreeProcess(pid, ppid, {argv.begin(), argv.size()}, cmdline_is_comm, uid);
  }

  // `select s.ts, s.dur, s.cpu, t.tid, t.name, s.end_state, s.priority from
  // sched s join thread t using(utid) order by s.ts, s.cpu`
  std::string SchedCsv() const;
  // `select ts.ts, ts.dur, ts.cpu, t.tid, ts.state, ts.io_wait, w.tid as
  // waker_tid from thread_state ts join thread t using(utid) left join thread
  // w on w.utid = ts.waker_utid order by ts.ts, t.tid, ts.state`
  std::string ThreadStateCsv() const;
  // `select t.utid, t.tid, t.name, t.start_ts, t.end_ts, p.pid,
  // t.is_main_thread from thread t left join process p using(upid) order by
  // t.utid`
  std::string ThreadCsv() const;
  // `select p.upid, p.pid, p.name, p.cmdline, p.start_ts, p.end_ts, pp.pid as
  // ppid, p.uid from process p left join process pp on pp.upid =
  // p.parent_upid order by p.upid`
  std::string ProcessCsv() const;

  TraceStorage storage;
  ProcessTracker processes;
  SchedTracker sched;
};

// tests/data/query/sched_full.textproto, as calls in timestamp order.
void FeedSchedFull(TrackerFeeder& f);
// tests/data/query/process.textproto, as calls in timestamp order.
void FeedProcess(TrackerFeeder& f);

}  // namespace sluice

#endif  // SLUICE_TESTS_USER_QUERY_IMPORTER_TRACKER_TEST_UTIL_H_
