// Per-thread aggregates of the sched and thread_state tables, computed in one
// pass over the columns the first time a query reads them, and served as the
// tables sluice_thread_cpu and sluice_thread_runnable (sluice's own: Perfetto
// has no such tables; docs/QUERY.md).
//
// Why in C++: each equals a GROUP BY that SQLite answers in 0.7-1.9 s of CPU
// on a 10 M-event sched trace, about 70 ns a row of interpreter work
// (measured, docs/PERFORMANCE.md); one pass over the arrays costs a few ns a
// row. `sluice report` reads them for its CPU and latency sections, which
// must cost less than half the import.
//
//   sluice_thread_cpu        one row per thread and CPU it ran on:
//                            utid, cpu, runs (sched rows), dur (their total,
//                            slices still running at the end left out);
//                            utid 0 is each CPU's idle task.
//                            = select utid, cpu, count(*), sum(dur) from sched
//                              where dur >= 0 group by utid, cpu
//   sluice_thread_runnable   one row per thread that waited to run:
//                            utid, waits, dur, p50_dur, p90_dur, p99_dur,
//                            max_dur over its thread_state rows in state R or
//                            R+ (closed ones, dur >= 0); percentiles as
//                            percentile() computes them (interpolated, so
//                            they may be fractional).
//   sluice_thread_runnable_histogram
//                            the same waits per thread in power-of-two
//                            buckets: utid, bucket b, lower_ns 2^b, waits
//                            (those with 2^b <= dur < 2^(b+1); dur 0 in b 0)
//   sluice_thread_state_time one row per thread and state it was in: utid,
//                            state, rows, dur (their total, an open row's
//                            -1 included, as upstream's sums count it), by
//                            utid, then state: sched.time_in_state's sums
//                            = select utid, state, count(*), sum(dur)
//                              from thread_state group by utid, state
//   sluice_cpu_timeline      the trace cut into equal spans (1000, or fewer
//                            beyond 40 CPUs: 40000 cells at most, so the HTML
//                            page stays small; at least
//                            50 spans); per CPU and span with any run: cpu,
//                            bucket, ts, dur (of the span), run_ns (time
//                            running anything but the idle task; a run that
//                            crosses spans is split at their edges), top_upid
//                            and top_run_ns (the process that ran longest).
#ifndef SLUICE_USER_QUERY_ENGINE_SCHED_SUMMARIES_H_
#define SLUICE_USER_QUERY_ENGINE_SCHED_SUMMARIES_H_

#include <cstdint>
#include <vector>

#include "user/query/storage/trace_storage.h"

namespace sluice {

struct ThreadCpuSummary {
  std::vector<uint32_t> utid;
  std::vector<uint32_t> cpu;
  std::vector<int64_t> runs;
  std::vector<int64_t> dur;
  size_t size() const { return utid.size(); }
};

struct RunnableHistogram {
  std::vector<uint32_t> utid;
  std::vector<uint32_t> bucket;
  std::vector<int64_t> waits;
  size_t size() const { return utid.size(); }
};

struct ThreadStateTime {
  std::vector<uint32_t> utid;
  std::vector<StringId> state;
  std::vector<int64_t> rows;
  std::vector<int64_t> dur;
  size_t size() const { return utid.size(); }
};

struct CpuTimeline {
  int64_t start_ts = 0;
  int64_t bucket_ns = 1;
  uint32_t buckets = 0;
  std::vector<uint32_t> cpu;
  std::vector<uint32_t> bucket;
  std::vector<int64_t> run_ns;
  std::vector<uint32_t> top_upid;  // kNullU32: a thread without a process
  std::vector<int64_t> top_run_ns;
  size_t size() const { return cpu.size(); }
};

struct ThreadRunnableSummary {
  std::vector<uint32_t> utid;
  std::vector<int64_t> waits;
  std::vector<int64_t> dur;
  std::vector<double> p50_dur;
  std::vector<double> p90_dur;
  std::vector<double> p99_dur;
  std::vector<int64_t> max_dur;
  size_t size() const { return utid.size(); }
};

// Computes each summary on first use. The storage must not change after
// (it does not once imported). Not thread-safe: one SQLite connection uses it.
class SchedSummaries {
 public:
  explicit SchedSummaries(const TraceStorage* storage) : storage_(storage) {}
  const ThreadCpuSummary& thread_cpu();
  const ThreadRunnableSummary& thread_runnable();
  const RunnableHistogram& runnable_histogram();
  const CpuTimeline& cpu_timeline();
  const ThreadStateTime& thread_state_time();

 private:
  const TraceStorage* storage_;
  bool have_thread_cpu_ = false;
  bool have_thread_runnable_ = false;
  bool have_runnable_histogram_ = false;
  bool have_cpu_timeline_ = false;
  bool have_thread_state_time_ = false;
  ThreadCpuSummary thread_cpu_;
  ThreadRunnableSummary thread_runnable_;
  RunnableHistogram runnable_histogram_;
  CpuTimeline cpu_timeline_;
  ThreadStateTime thread_state_time_;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_SCHED_SUMMARIES_H_
