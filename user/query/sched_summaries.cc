#include "user/query/sched_summaries.h"

#include <algorithm>
#include <span>

#include "user/query/percentile_functions.h"

namespace sluice {

// Hot path (a pass over every sched row): plain arrays indexed by utid and
// cpu, no hashing. Utids and cpus are dense small integers.
const ThreadCpuSummary& SchedSummaries::thread_cpu() {
  if (have_thread_cpu_) return thread_cpu_;
  have_thread_cpu_ = true;
  const SchedSliceTable& sched = storage_->sched;
  uint32_t cpus = 0;
  uint32_t utids = 0;
  for (size_t i = 0; i < sched.size(); ++i) {
    cpus = std::max(cpus, sched.cpu[i] + 1);
    utids = std::max(utids, sched.utid[i] + 1);
  }
  // Cpus are capped at import (kMaxCpus), so utids x cpus stays bounded by
  // the rows: a cell per (utid, cpu) pair when that is small, else sorted
  // pairs.
  std::vector<int64_t> runs(static_cast<size_t>(utids) * cpus);
  std::vector<int64_t> dur(runs.size());
  if (runs.size() > 4 * sched.size() + 1024) runs.clear();
  if (!runs.empty()) {
    for (size_t i = 0; i < sched.size(); ++i) {
      if (sched.dur[i] < 0) continue;
      const size_t cell = static_cast<size_t>(sched.utid[i]) * cpus + sched.cpu[i];
      runs[cell]++;
      dur[cell] += sched.dur[i];
    }
    for (size_t cell = 0; cell < runs.size(); ++cell) {
      if (runs[cell] == 0) continue;
      thread_cpu_.utid.push_back(static_cast<uint32_t>(cell / cpus));
      thread_cpu_.cpu.push_back(static_cast<uint32_t>(cell % cpus));
      thread_cpu_.runs.push_back(runs[cell]);
      thread_cpu_.dur.push_back(dur[cell]);
    }
    return thread_cpu_;
  }
  // Sparse: many threads on many CPUs each. Sort (utid, cpu, dur) triples.
  std::vector<std::pair<uint64_t, int64_t>> keyed;
  keyed.reserve(sched.size());
  for (size_t i = 0; i < sched.size(); ++i) {
    if (sched.dur[i] >= 0)
      keyed.emplace_back((static_cast<uint64_t>(sched.utid[i]) << 32) | sched.cpu[i], sched.dur[i]);
  }
  std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < keyed.size(); ++i) {
    if (i == 0 || keyed[i].first != keyed[i - 1].first) {
      thread_cpu_.utid.push_back(static_cast<uint32_t>(keyed[i].first >> 32));
      thread_cpu_.cpu.push_back(static_cast<uint32_t>(keyed[i].first));
      thread_cpu_.runs.push_back(0);
      thread_cpu_.dur.push_back(0);
    }
    thread_cpu_.runs.back()++;
    thread_cpu_.dur.back() += keyed[i].second;
  }
  return thread_cpu_;
}

// Hot path (a pass over every thread_state row): the R and R+ string ids are
// looked up once; waits are bucketed by utid in one counting pass, then each
// thread's durations are selected in place.
const ThreadRunnableSummary& SchedSummaries::thread_runnable() {
  if (have_thread_runnable_) return thread_runnable_;
  have_thread_runnable_ = true;
  const ThreadStateTable& ts = storage_->thread_state;
  const StringId runnable = storage_->strings.Find("R");
  const StringId preempted = storage_->strings.Find("R+");
  if (runnable == kNullStringId && preempted == kNullStringId) return thread_runnable_;
  auto is_wait = [&](size_t i) {
    return (ts.state[i] == runnable || ts.state[i] == preempted) && ts.dur[i] >= 0;
  };
  uint32_t utids = 0;
  for (size_t i = 0; i < ts.size(); ++i)
    if (is_wait(i)) utids = std::max(utids, ts.utid[i] + 1);
  std::vector<uint64_t> first(static_cast<size_t>(utids) + 1, 0);
  for (size_t i = 0; i < ts.size(); ++i)
    if (is_wait(i)) first[ts.utid[i] + 1]++;
  for (size_t u = 1; u < first.size(); ++u) first[u] += first[u - 1];
  std::vector<double> durs(first.back());
  std::vector<uint64_t> next(first.begin(), first.end() - 1);
  for (size_t i = 0; i < ts.size(); ++i)
    if (is_wait(i)) durs[next[ts.utid[i]]++] = static_cast<double>(ts.dur[i]);
  for (uint32_t u = 0; u < utids; ++u) {
    if (first[u] == first[u + 1]) continue;
    std::span<double> mine(durs.data() + first[u], durs.data() + first[u + 1]);
    int64_t total = 0;
    double longest = 0;
    for (double d : mine) total += static_cast<int64_t>(d), longest = std::max(longest, d);
    thread_runnable_.utid.push_back(u);
    thread_runnable_.waits.push_back(static_cast<int64_t>(mine.size()));
    thread_runnable_.dur.push_back(total);
    thread_runnable_.p50_dur.push_back(InterpolatedPercentile(mine, 0.50));
    thread_runnable_.p90_dur.push_back(InterpolatedPercentile(mine, 0.90));
    thread_runnable_.p99_dur.push_back(InterpolatedPercentile(mine, 0.99));
    thread_runnable_.max_dur.push_back(static_cast<int64_t>(longest));
  }
  return thread_runnable_;
}

}  // namespace sluice
