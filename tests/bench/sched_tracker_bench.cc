// Benchmark of the `sluice query` sched import hot path: SchedTracker and
// ProcessTracker fed a synthetic 12 M event stream shaped like
// /work/bench-data/sched-10m.pftrace (2 CPUs, ~200 tasks, 65 % switches,
// 35 % wakings), into a fresh TraceStorage each iteration. Decoding is not
// included: the events are prepared in memory first.
//
//   BM_SchedImport/0   full sched_switch / sched_waking (comm per event)
//   BM_SchedImport/1   compact_sched switches and wakings
//
// Rate = events per second of wall time (items_per_second).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "user/query/importer/process_tracker.h"
#include "user/query/importer/sched_tracker.h"
#include "user/query/storage/trace_storage.h"

namespace sluice {
namespace {

constexpr size_t kEvents = 12'000'000;
constexpr int kTasks = 200;

struct Event {
  int64_t ts;
  int64_t prev_state;
  int32_t prev_pid;
  int32_t next_pid;  // wakee for wakings
  int32_t waker_pid;
  uint32_t cpu;
  bool is_switch;
};

const std::vector<std::string>& Comms() {
  static const std::vector<std::string> comms = [] {
    std::vector<std::string> c(kTasks + 1);
    c[0] = "swapper/0";
    for (int i = 1; i <= kTasks; i++) c[i] = "worker-" + std::to_string(i % 37);
    return c;
  }();
  return comms;
}

int32_t Pid(int task) { return task == 0 ? 0 : 1000 + task; }

const std::vector<Event>& Stream() {
  static const std::vector<Event> events = [] {
    std::vector<Event> ev;
    ev.reserve(kEvents);
    std::mt19937 rng(42);
    int current[2] = {0, 0};
    int64_t ts = 1'000'000;
    while (ev.size() < kEvents) {
      ts += 500 + rng() % 2000;
      uint32_t cpu = rng() % 2;
      if (rng() % 100 < 35) {
        ev.push_back({ts, 0, 0, Pid(1 + static_cast<int>(rng() % kTasks)), Pid(current[cpu]), cpu,
                      false});
        continue;
      }
      int next = rng() % 100 < 30 ? 0 : 1 + static_cast<int>(rng() % kTasks);
      uint32_t r = rng() % 100;
      int64_t state = r < 60 ? 1 : r < 80 ? 0x100 : r < 95 ? 0 : 2;
      ev.push_back({ts, state, Pid(current[cpu]), Pid(next), 0, cpu, true});
      current[cpu] = next;
    }
    return ev;
  }();
  return events;
}

const std::string& CommOf(int32_t pid) { return Comms()[pid == 0 ? 0 : pid - 1000]; }

void BM_SchedImport(benchmark::State& state) {
  const bool compact = state.range(0) == 1;
  const std::vector<Event>& events = Stream();
  for (auto _ : state) {
    TraceStorage storage;
    ProcessTracker processes(&storage);
    SchedTracker sched(&storage, &processes);
    sched.SetKernelVersion(6, 18);
    for (const Event& e : events) {
      if (e.is_switch) {
        if (compact)
          sched.OnSwitchCompact(e.ts, e.cpu, e.prev_state, e.next_pid, CommOf(e.next_pid), 120);
        else
          sched.OnSwitch(e.ts, e.cpu, e.prev_pid, CommOf(e.prev_pid), 120, e.prev_state,
                         e.next_pid, CommOf(e.next_pid), 120);
      } else if (compact) {
        sched.OnWakingCompact(e.ts, e.cpu, e.next_pid, 0);
      } else {
        processes.GetOrCreateThread(e.waker_pid);  // the importer's ftrace_event utid
        sched.OnWaking(e.ts, e.waker_pid, e.next_pid, CommOf(e.next_pid));
      }
    }
    sched.Finish(events.back().ts);
    benchmark::DoNotOptimize(storage.thread_state.size());
    state.counters["sched_rows"] = static_cast<double>(storage.sched.size());
    state.counters["thread_state_rows"] = static_cast<double>(storage.thread_state.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * events.size()));
}
BENCHMARK(BM_SchedImport)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
