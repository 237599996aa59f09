#include "user/query/engine/sched_summaries.h"

#include <algorithm>
#include <span>
#include <unordered_map>

#include "user/query/engine/percentile_functions.h"

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
  // A cell per (utid, cpu) pair when there are few pairs next to the rows
  // (decided before allocating: thousands of threads on hundreds of CPUs
  // would be gigabytes of cells), else sorted pairs.
  const size_t cells = static_cast<size_t>(utids) * cpus;
  if (cells <= 4 * sched.size() + 1024) {
    std::vector<int64_t> runs(cells);
    std::vector<int64_t> dur(cells);
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
const ThreadStateTime& SchedSummaries::thread_state_time() {
  if (have_thread_state_time_) return thread_state_time_;
  have_thread_state_time_ = true;
  const ThreadStateTable& ts = storage_->thread_state;
  // (utid, state) -> its sums; few keys, so a hash map, then sorted.
  struct Sums {
    int64_t rows = 0, dur = 0;
  };
  std::unordered_map<uint64_t, Sums> sums;
  for (size_t i = 0; i < ts.size(); ++i) {
    Sums& s = sums[uint64_t{ts.utid[i]} << 32 | ts.state[i]];
    s.rows++;
    s.dur += ts.dur[i];
  }
  std::vector<std::pair<uint64_t, Sums>> sorted(sums.begin(), sums.end());
  const StringPool& strings = storage_->strings;
  // By utid, then the state's text (SQLite's GROUP BY order).
  std::sort(sorted.begin(), sorted.end(), [&strings](const auto& a, const auto& b) {
    if (a.first >> 32 != b.first >> 32) return a.first >> 32 < b.first >> 32;
    return strings.Get(static_cast<StringId>(a.first)) < strings.Get(static_cast<StringId>(b.first));
  });
  for (const auto& [key, s] : sorted) {
    thread_state_time_.utid.push_back(static_cast<uint32_t>(key >> 32));
    thread_state_time_.state.push_back(static_cast<StringId>(key));
    thread_state_time_.rows.push_back(s.rows);
    thread_state_time_.dur.push_back(s.dur);
  }
  return thread_state_time_;
}

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

namespace sluice {

namespace {

// floor(log2(dur)), 0 for dur 0 and 1.
uint32_t Log2Bucket(int64_t dur) {
  return dur <= 1 ? 0 : static_cast<uint32_t>(63 - __builtin_clzll(static_cast<uint64_t>(dur)));
}

}  // namespace

// Hot path (a pass over every thread_state row): one counter per (thread,
// log2 bucket) in a flat array; 64 buckets cover every int64 duration.
const RunnableHistogram& SchedSummaries::runnable_histogram() {
  if (have_runnable_histogram_) return runnable_histogram_;
  have_runnable_histogram_ = true;
  const ThreadStateTable& ts = storage_->thread_state;
  const StringId runnable = storage_->strings.Find("R");
  const StringId preempted = storage_->strings.Find("R+");
  if (runnable == kNullStringId && preempted == kNullStringId) return runnable_histogram_;
  constexpr uint32_t kBuckets = 64;
  // 64 counters for each thread that waited, not for every utid up to the
  // largest: a slot index per utid, slots handed out in order of first wait.
  std::vector<uint32_t> slot_of;
  std::vector<uint32_t> utid_of_slot;
  std::vector<int64_t> counts;
  for (size_t i = 0; i < ts.size(); ++i) {
    if ((ts.state[i] != runnable && ts.state[i] != preempted) || ts.dur[i] < 0) continue;
    const uint32_t utid = ts.utid[i];
    if (utid >= slot_of.size()) slot_of.resize(static_cast<size_t>(utid) + 1, kNullU32);
    if (slot_of[utid] == kNullU32) {
      slot_of[utid] = static_cast<uint32_t>(utid_of_slot.size());
      utid_of_slot.push_back(utid);
      counts.resize(counts.size() + kBuckets);
    }
    counts[static_cast<size_t>(slot_of[utid]) * kBuckets + Log2Bucket(ts.dur[i])]++;
  }
  // Rows by utid, as a GROUP BY utid, bucket gives them.
  for (uint32_t utid = 0; utid < slot_of.size(); ++utid) {
    if (slot_of[utid] == kNullU32) continue;
    const int64_t* row = &counts[static_cast<size_t>(slot_of[utid]) * kBuckets];
    for (uint32_t bucket = 0; bucket < kBuckets; ++bucket) {
      if (row[bucket] == 0) continue;
      runnable_histogram_.utid.push_back(utid);
      runnable_histogram_.bucket.push_back(bucket);
      runnable_histogram_.waits.push_back(row[bucket]);
    }
  }
  return runnable_histogram_;
}

// Hot path (a pass over every sched row): each cell (cpu, span) keeps a short
// list of (upid, ns); a span sees few processes, so a linear search beats a
// map. Runs are clipped at span edges, so a long run fills every span it
// covers.
const CpuTimeline& SchedSummaries::cpu_timeline() {
  if (have_cpu_timeline_) return cpu_timeline_;
  have_cpu_timeline_ = true;
  CpuTimeline& t = cpu_timeline_;
  const SchedSliceTable& sched = storage_->sched;
  const uint64_t cpus = std::max<uint64_t>(1, storage_->cpu.size());
  t.buckets = static_cast<uint32_t>(std::clamp<uint64_t>(40000 / cpus, 50, 1000));
  t.start_ts = storage_->start_ts == kNullInt ? 0 : storage_->start_ts;
  const int64_t span = storage_->start_ts == kNullInt ? 0 : storage_->end_ts - storage_->start_ts;
  t.bucket_ns = std::max<int64_t>(1, (span + t.buckets - 1) / t.buckets);
  if (sched.size() == 0) return t;
  // The CPUs that ran something, numbered densely: a relayed machine's
  // ucpus start at machine * kMaxCpusPerMachine, and a cell per number up
  // to those would be mostly empty.
  constexpr uint32_t kPerMachine = CpuTable::kMaxCpusPerMachine;
  std::vector<std::vector<uint32_t>> dense_by_machine;  // [machine][cpu] -> dense index + 1
  for (size_t i = 0; i < sched.size(); ++i) {
    const uint32_t machine = sched.cpu[i] / kPerMachine, cpu = sched.cpu[i] % kPerMachine;
    if (machine >= dense_by_machine.size()) dense_by_machine.resize(machine + 1);
    if (cpu >= dense_by_machine[machine].size()) dense_by_machine[machine].resize(cpu + 1, 0);
    dense_by_machine[machine][cpu] = 1;
  }
  std::vector<uint32_t> ucpus;  // dense index -> ucpu, ascending
  for (uint32_t machine = 0; machine < dense_by_machine.size(); ++machine)
    for (uint32_t cpu = 0; cpu < dense_by_machine[machine].size(); ++cpu)
      if (dense_by_machine[machine][cpu]) {
        ucpus.push_back(machine * kPerMachine + cpu);
        dense_by_machine[machine][cpu] = static_cast<uint32_t>(ucpus.size());
      }
  auto dense = [&](uint32_t ucpu) { return dense_by_machine[ucpu / kPerMachine][ucpu % kPerMachine] - 1; };
  struct ProcessTime {
    uint32_t upid;
    int64_t ns;
  };
  std::vector<std::vector<ProcessTime>> cells(ucpus.size() * t.buckets);
  const std::vector<uint32_t>& thread_upid = storage_->thread.upid;
  for (size_t i = 0; i < sched.size(); ++i) {
    // Idle tasks (tid 0, one per machine) are not busy.
    if (storage_->thread.tid[sched.utid[i]] == 0 || sched.dur[i] <= 0) continue;
    const uint32_t upid = sched.utid[i] < thread_upid.size() ? thread_upid[sched.utid[i]] : kNullU32;
    int64_t ts = std::max(sched.ts[i], t.start_ts);
    const int64_t end = sched.ts[i] + sched.dur[i];
    const size_t first_cell = static_cast<size_t>(dense(sched.cpu[i])) * t.buckets;
    while (ts < end) {
      const int64_t bucket = (ts - t.start_ts) / t.bucket_ns;
      if (bucket >= t.buckets) break;  // Past trace_end(): cannot happen, but never index past.
      const int64_t bucket_end = t.start_ts + (bucket + 1) * t.bucket_ns;
      const int64_t ns = std::min(end, bucket_end) - ts;
      std::vector<ProcessTime>& cell = cells[first_cell + static_cast<size_t>(bucket)];
      auto it = std::find_if(cell.begin(), cell.end(), [upid](const ProcessTime& p) { return p.upid == upid; });
      if (it == cell.end()) cell.push_back({upid, ns});
      else it->ns += ns;
      ts = bucket_end;
    }
  }
  for (size_t c = 0; c < cells.size(); ++c) {
    if (cells[c].empty()) continue;
    int64_t total = 0;
    const ProcessTime* top = &cells[c][0];
    for (const ProcessTime& p : cells[c]) {
      total += p.ns;
      if (p.ns > top->ns) top = &p;
    }
    t.cpu.push_back(ucpus[c / t.buckets]);
    t.bucket.push_back(static_cast<uint32_t>(c % t.buckets));
    t.run_ns.push_back(total);
    t.top_upid.push_back(top->upid);
    t.top_run_ns.push_back(top->ns);
  }
  return t;
}

}  // namespace sluice
