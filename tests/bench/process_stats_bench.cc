// Benchmark of what linux.process_stats costs a streaming session at rest,
// on this machine's real /proc. A flush runs every flush period of a
// streamed file; on a quiet server most find nothing new, and the rest find
// a thread or two.
//
//   BM_FlushNothingNew        a flush that finds no new pid: one read of
//                             /proc/loadavg
//   BM_LoadavgOpenReadClose   that read as ReadFile does it (the design
//                             before PreadFromStart): open, read to EOF, close
//   BM_LoadavgPread           that read as a flush does it: one pread of an
//                             fd kept open
//   BM_FlushOneNewThread      a thread created, a flush that writes it, the
//                             thread ended; less BM_CreateThreadOnly, the
//                             flush's cost for one new thread
//   BM_CreateThreadOnly       the same without the flush: the baseline
//   BM_StatusReadFile         one /proc/<tid>/status read whole: the floor of
//                             what a flush pays per new pid
//   BM_StatusIfstream         the same read and scanned line by line with an
//                             ifstream: the previous design
//
// Run: make bench && build/bench/process_stats_bench. Numbers move with
// what else runs (other pids make flushes find something new): compare
// rows of one run.
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <semaphore>
#include <string>
#include <thread>

#include <benchmark/benchmark.h>

#include "perfetto/config/process_stats/process_stats_config.pb.h"
#include "shm/base/file_util.h"
#include "shm/base/scoped_fd.h"
#include "shm/trace_writer.h"
#include "user/probes/process_stats/process_stats_data_source.h"

namespace sluice {
namespace {

struct StartedSource {
  HeapTraceWriter* writer = nullptr;
  std::unique_ptr<ProcessStatsDataSource> source;
};

// A source on /proc that has written the process tree once, as a session
// does at start.
StartedSource StartOnRealProc() {
  perfetto::protos::ProcessStatsConfig config;
  config.set_scan_all_processes_on_start(true);
  config.set_record_thread_names(true);
  auto writer = std::make_unique<HeapTraceWriter>();
  StartedSource started;
  started.writer = writer.get();
  started.source = std::make_unique<ProcessStatsDataSource>(config, std::move(writer));
  started.source->Start();
  started.writer->TakePackets();
  return started;
}

// A thread that lives until Release(), so that a flush finds its
// /proc/<tid>; its destructor joins it.
class ParkedThread {
 public:
  ParkedThread() : thread_([this] { release_.acquire(); }) {}
  ~ParkedThread() {
    release_.release();
    thread_.join();
  }

 private:
  std::binary_semaphore release_{0};
  std::thread thread_;
};

void BM_FlushNothingNew(benchmark::State& state) {
  StartedSource started = StartOnRealProc();
  for (auto _ : state) {
    started.source->Flush();
    started.writer->TakePackets();
  }
  state.counters["skipped"] = benchmark::Counter(static_cast<double>(started.source->scans_skipped()),
                                                 benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_FlushNothingNew);

void BM_LoadavgOpenReadClose(benchmark::State& state) {
  for (auto _ : state) {
    auto text = ReadFile("/proc/loadavg", 256);
    benchmark::DoNotOptimize(text);
  }
}
BENCHMARK(BM_LoadavgOpenReadClose);

void BM_LoadavgPread(benchmark::State& state) {
  ScopedFd fd;
  char buf[128];
  for (auto _ : state) {
    auto text = PreadFromStart("/proc/loadavg", &fd, buf);
    benchmark::DoNotOptimize(text);
  }
}
BENCHMARK(BM_LoadavgPread);

void BM_FlushOneNewThread(benchmark::State& state) {
  StartedSource started = StartOnRealProc();
  for (auto _ : state) {
    ParkedThread thread;
    started.source->Flush();
    started.writer->TakePackets();
  }
  state.counters["probed"] = benchmark::Counter(static_cast<double>(started.source->pids_probed()),
                                                benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_FlushOneNewThread);

void BM_CreateThreadOnly(benchmark::State& state) {
  for (auto _ : state) {
    ParkedThread thread;
  }
}
BENCHMARK(BM_CreateThreadOnly);

std::string OwnStatusPath() {
  return "/proc/self/task/" + std::to_string(syscall(SYS_gettid)) + "/status";
}

void BM_StatusReadFile(benchmark::State& state) {
  const std::string path = OwnStatusPath();
  for (auto _ : state) {
    auto text = ReadFile(path, 64 * 1024);
    benchmark::DoNotOptimize(text);
  }
}
BENCHMARK(BM_StatusReadFile);

void BM_StatusIfstream(benchmark::State& state) {
  const std::string path = OwnStatusPath();
  for (auto _ : state) {
    std::ifstream f(path);
    std::string line;
    int fields = 0;
    while (std::getline(f, line)) fields += line.rfind("Tgid:\t", 0) == 0;
    benchmark::DoNotOptimize(fields);
  }
}
BENCHMARK(BM_StatusIfstream);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
