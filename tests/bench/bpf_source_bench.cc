// Benchmarks of the linux.bpf source (docs/PERFORMANCE.md, "BPF source").
//
//   BM_DecodeRecords/<sink>          user space only: BpfBundleWriter over a
//                                    synthetic record mix (no root needed)
//   BM_DrainKernelRings/<mode>/<sink>  root: the programs fill the real rings
//                                    (reader paused, ping-pong workload), then
//                                    the reader thread drains them; rate =
//                                    records / reader thread CPU time
//   BM_PingPongCost/<mode>/<wakeup>  root: the whole source under a ping-pong
//                                    workload: BPF program run time +
//                                    reader CPU time per event
//   BM_WriteSyscallTax/<on>          root: write(2) to /dev/null without and
//                                    with the trace_marker program attached
//
// <mode>: 0 = per-CPU rings, 1 = one shared ring. <sink>: 0 = null sink
// (encodes into a reused buffer), 1 = HeapTraceWriter (one std::string per
// packet), 2 = SmbTraceWriter into a 4 MiB shared memory buffer whose
// committed chunks a stand-in service frees at once (no copy: the producer's
// cost only). <wakeup>: fill threshold percent, 0 = kernel default policy.
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "shm/commit_data.h"
#include "shm/shared_memory.h"
#include "tests/bench/freeing_commit_sink.h"
#include "shm/shared_memory_arbiter.h"
#include "shm/shm_abi.h"
#include "shm/trace_writer.h"
#include "sluice/bpf_config.pb.h"
#include "user/probes/bpf/bpf_bundle_writer.h"
#include "user/probes/bpf/bpf_data_source.h"

extern "C" {
#include "bpf/sched.h"
#include "bpf/trace_marker.h"
}

namespace sluice {
namespace {

// A TraceWriter that encodes into one reused buffer and keeps nothing: the
// cost of encoding without the cost of storing.
class NullTraceWriter : public TraceWriter, public ProtoWriterSink {
 public:
  NullTraceWriter() : buf_(new uint8_t[kBytes]) {}
  void Flush() override {}
  uint16_t writer_id() const override { return 1; }
  uint64_t packets_lost() const override { return 0; }
  ByteRange GetNewRange(ProtoWriter*, uint8_t*) override { return {buf_.get(), buf_.get() + kBytes}; }
  uint64_t bytes() const { return bytes_; }

 protected:
  ProtoWriter* BeginPacket() override {
    writer_.Reset({buf_.get(), buf_.get() + kBytes}, this);
    return &writer_;
  }
  void EndPacket() override { bytes_ += writer_.bytes_written(); }

 private:
  static constexpr size_t kBytes = 4 << 20;
  std::unique_ptr<uint8_t[]> buf_;
  ProtoWriter writer_;
  uint64_t bytes_ = 0;
};

struct Smb {
  static constexpr uint32_t kPageSize = 32768;
  Smb()
      : shm(std::move(SharedMemory::Create(4 << 20).value())),
        abi(shm->start(), shm->size(), kPageSize),
        service(&abi),
        arbiter(shm->start(), shm->size(), kPageSize, &service) {}
  std::unique_ptr<SharedMemory> shm;
  SharedMemoryAbi abi;
  FreeingCommitSink service;
  SharedMemoryArbiter arbiter;
};

Smb* TheSmb() {
  static Smb* smb = new Smb();  // lives for the process
  return smb;
}

std::unique_ptr<TraceWriter> MakeSink(int sink) {
  if (sink == 0) return std::make_unique<NullTraceWriter>();
  if (sink == 2) return TheSmb()->arbiter.CreateTraceWriter(0, BufferExhaustedPolicy::kStall);
  return std::make_unique<HeapTraceWriter>();
}

// A mix like a busy system's: half sched_switch, waking and wakeup, 1 in 10
// a short atrace marker.
std::vector<std::vector<uint8_t>> RecordMix() {
  std::vector<std::vector<uint8_t>> recs;
  for (int i = 0; i < 1000; i++) {
    std::vector<uint8_t> v;
    auto put = [&v](const void* p, size_t n) {
      v.resize(n);
      memcpy(v.data(), p, n);
    };
    uint64_t ts = 1'000'000'000ull + static_cast<uint64_t>(i) * 1000;
    if (i % 10 == 9) {
      std::string payload = "B|1234|frame " + std::to_string(i);
      sluice_trace_marker m = {};
      m.hdr = {ts, 1234, SLUICE_REC_TRACE_MARKER, 0};
      m.len = m.captured = static_cast<uint32_t>(payload.size());
      v.resize(sizeof(m) + 96);
      memcpy(v.data(), &m, sizeof(m));
      memcpy(v.data() + sizeof(m), payload.data(), payload.size());
    } else if (i % 2 == 0) {
      sluice_sched_switch r = {};
      r.hdr = {ts, 1000u + i % 7, SLUICE_REC_SCHED_SWITCH, 0};
      strcpy(r.prev_comm, "RenderThread");
      strcpy(r.next_comm, "swapper/0");
      r.prev_pid = 1000 + i % 7;
      r.prev_prio = 120;
      r.prev_state = 1;
      r.next_prio = 120;
      put(&r, sizeof(r));
    } else {
      sluice_sched_wakeup r = {};
      r.hdr = {ts, 1000u + i % 5, i % 4 == 1 ? uint16_t{SLUICE_REC_SCHED_WAKING} : uint16_t{SLUICE_REC_SCHED_WAKEUP}, 0};
      strcpy(r.comm, "binder:123_4");
      r.pid = 2000 + i % 3;
      r.prio = 120;
      r.target_cpu = 1;
      put(&r, sizeof(r));
    }
    recs.push_back(std::move(v));
  }
  return recs;
}

void BM_DecodeRecords(benchmark::State& state) {
  auto recs = RecordMix();
  auto writer = MakeSink(static_cast<int>(state.range(0)));
  BpfBundleWriter bundle(0, writer.get());
  for (auto _ : state) {
    for (const auto& r : recs) bundle.Append(r.data(), r.size());
    bundle.Close();
    if (auto* heap = dynamic_cast<HeapTraceWriter*>(writer.get())) heap->TakePackets();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(recs.size()));
}
BENCHMARK(BM_DecodeRecords)->Arg(0)->Arg(1)->Arg(2);

// ---- Kernel benchmarks (root). ----

bool CanRunKernel(benchmark::State& state) {
  if (geteuid() != 0 || access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
    state.SkipWithError("needs root and /sys/kernel/btf/vmlinux");
    return false;
  }
  return true;
}

// Two threads bounce a byte `rounds` times through two pipes.
void PingPong(int rounds) {
  int a[2], b[2];
  if (pipe(a) || pipe(b)) abort();
  std::thread t([&] {
    char c;
    for (int i = 0; i < rounds; i++) {
      if (read(a[0], &c, 1) != 1 || write(b[1], &c, 1) != 1) abort();
    }
  });
  char c = 'x';
  for (int i = 0; i < rounds; i++) {
    if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1) abort();
  }
  t.join();
  for (int fd : {a[0], a[1], b[0], b[1]}) close(fd);
}

protos::BpfConfig SchedConfig(uint32_t ring_kb) {
  protos::BpfConfig config;
  for (const char* e : {"sched/sched_switch", "sched/sched_waking", "sched/sched_wakeup"})
    config.add_events(e);
  config.set_ringbuf_size_kb(ring_kb);
  return config;
}

void BM_DrainKernelRings(benchmark::State& state) {
  if (!CanRunKernel(state)) return;
  BpfDataSourceOptions o;
  o.ring_mode = state.range(0) ? BpfDataSourceOptions::RingMode::kShared
                               : BpfDataSourceOptions::RingMode::kPerCpu;
  o.drain_period_ms = 1000;
  o.warn = [](const std::string&) {};
  const int sink = static_cast<int>(state.range(1));
  auto source = BpfDataSource::Create(SchedConfig(64 * 1024), [sink] { return MakeSink(sink); }, o);
  if (!source.ok()) {
    state.SkipWithError(source.status().message().c_str());
    return;
  }
  (void)(*source)->Start();
  uint64_t records = 0, cpu_ns = 0;
  for (auto _ : state) {
    (*source)->PauseReadingForTesting();
    (*source)->Flush();  // the reader is idle from here on
    PingPong(60000);
    BpfSourceStats before = (*source)->stats();
    (*source)->ResumeReadingForTesting();
    (*source)->Flush();  // returns after the reader drained and flushed
    BpfSourceStats after = (*source)->stats();
    uint64_t n = after.total.delivered - before.total.delivered;
    uint64_t ns = after.reader_cpu_ns - before.reader_cpu_ns;
    records += n;
    cpu_ns += ns;
    state.SetIterationTime(static_cast<double>(ns) / 1e9);
    if (after.total.dropped != before.total.dropped) state.SkipWithError("ring overflowed");
  }
  (*source)->Stop();
  state.SetItemsProcessed(static_cast<int64_t>(records));
  state.counters["records_per_cycle"] = static_cast<double>(records) / static_cast<double>(state.iterations());
  state.counters["reader_ns_per_record"] = static_cast<double>(cpu_ns) / static_cast<double>(records);
}
BENCHMARK(BM_DrainKernelRings)
    ->Args({0, 0})->Args({0, 1})->Args({0, 2})->Args({1, 0})->Args({1, 1})->Args({1, 2})
    ->UseManualTime()->Iterations(5)->Unit(benchmark::kMillisecond);

uint64_t ProcessCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void BM_PingPongCost(benchmark::State& state) {
  if (!CanRunKernel(state)) return;
  constexpr int kRounds = 100000;
  BpfDataSourceOptions o;
  o.ring_mode = state.range(0) ? BpfDataSourceOptions::RingMode::kShared
                               : BpfDataSourceOptions::RingMode::kPerCpu;
  o.wakeup_fill_percent = static_cast<uint32_t>(state.range(1));
  o.enable_run_time_stats = true;
  o.warn = [](const std::string&) {};
  // Baseline: the workload alone.
  uint64_t base_cpu = ProcessCpuNs();
  auto t0 = std::chrono::steady_clock::now();
  PingPong(kRounds);
  double base_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  base_cpu = ProcessCpuNs() - base_cpu;

  auto source = BpfDataSource::Create(SchedConfig(4096), [] { return MakeSink(0); }, o);
  if (!source.ok()) {
    state.SkipWithError(source.status().message().c_str());
    return;
  }
  (void)(*source)->Start();
  uint64_t events = 0, bpf_ns = 0, reader_ns = 0, traced_cpu = 0;
  double wall = 0;
  for (auto _ : state) {
    BpfSourceStats c0 = (*source)->stats();
    uint64_t run0 = 0, cnt0 = 0, run1 = 0, cnt1 = 0;
    (void)(*source)->ReadRunStats(&run0, &cnt0);
    uint64_t cpu0 = ProcessCpuNs();
    auto w0 = std::chrono::steady_clock::now();
    PingPong(kRounds);
    (*source)->Flush();
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    traced_cpu += ProcessCpuNs() - cpu0;
    (void)(*source)->ReadRunStats(&run1, &cnt1);
    BpfSourceStats c1 = (*source)->stats();
    events += c1.total.delivered - c0.total.delivered;
    bpf_ns += run1 - run0;
    reader_ns += c1.reader_cpu_ns - c0.reader_cpu_ns;
  }
  (*source)->Stop();
  double ev = static_cast<double>(events);
  state.SetItemsProcessed(static_cast<int64_t>(events));
  state.counters["events"] = ev;
  state.counters["bpf_ns_per_event"] = static_cast<double>(bpf_ns) / ev;
  state.counters["reader_ns_per_event"] = static_cast<double>(reader_ns) / ev;
  // CPU time of the whole source per million events, in ms: programs +
  // reader thread.
  state.counters["source_cpu_ms_per_Mevent"] = static_cast<double>(bpf_ns + reader_ns) / ev;
  // The process's extra CPU (workload + reader + programs run in the
  // workload's context) over the untraced baseline, per million events.
  double iters = static_cast<double>(state.iterations());
  state.counters["extra_cpu_ms_per_Mevent"] =
      (static_cast<double>(traced_cpu) / iters - static_cast<double>(base_cpu)) / (ev / iters);
  state.counters["slowdown_pct"] = 100.0 * (wall / iters - base_wall) / base_wall;
}
BENCHMARK(BM_PingPongCost)
    ->Args({0, 25})->Args({1, 25})->Args({0, 0})->Args({1, 0})
    ->Iterations(3)->Unit(benchmark::kMillisecond);


// What watching trace_marker through sys_enter_write costs every other
// write(2) on the machine: write(2) of 1 byte to /dev/null, without and with
// the source (ftrace/print only).
void BM_WriteSyscallTax(benchmark::State& state) {
  if (!CanRunKernel(state)) return;
  std::unique_ptr<BpfDataSource> source;
  if (state.range(0)) {
    protos::BpfConfig config;
    config.add_events("ftrace/print");
    BpfDataSourceOptions o;
    o.warn = [](const std::string&) {};
    auto s = BpfDataSource::Create(config, [] { return MakeSink(0); }, o);
    if (!s.ok()) {
      state.SkipWithError(s.status().message().c_str());
      return;
    }
    source = std::move(*s);
    (void)source->Start();
  }
  int fd = open("/dev/null", O_WRONLY);
  char c = 'x';
  for (auto _ : state) {
    if (write(fd, &c, 1) != 1) abort();
  }
  close(fd);
  if (source) source->Stop();
}
BENCHMARK(BM_WriteSyscallTax)->Arg(0)->Arg(1);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
