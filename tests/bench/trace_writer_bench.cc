// Cost per packet of SmbTraceWriter.
//
//   make bench && build/bench/trace_writer_bench
//
// The service side here is the minimum that keeps chunks flowing: it frees
// each committed chunk in the SMB right away without copying (the copy is the
// TraceBuffer's cost, benchmarked separately). Baseline in the same binary:
// memcpy of the same number of bytes into a chunk-sized ring.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <vector>

#include "perfetto/trace/ftrace/ftrace.pb.h"
#include "perfetto/trace/ftrace/ftrace_event.pb.h"
#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "shm/shared_memory.h"
#include "tests/bench/freeing_commit_sink.h"
#include "shm/shared_memory_arbiter.h"

namespace sluice {
namespace {

using perfetto::protos::FtraceEvent;
using perfetto::protos::FtraceEventBundle;
using perfetto::protos::PrintFtraceEvent;
using perfetto::protos::TracePacket;

struct Fixture {
  Fixture() {
    shm = std::move(SharedMemory::Create(4 << 20).value());
    abi = SharedMemoryAbi(shm->start(), shm->size(), 32768);
    sink = std::make_unique<FreeingCommitSink>(&abi);
    ArbiterOptions options;
    options.layout = PageLayout::kDiv1;
    arbiter = std::make_unique<SharedMemoryArbiter>(shm->start(), shm->size(), 32768,
                                                    sink.get(), options);
  }
  std::unique_ptr<SharedMemory> shm;
  SharedMemoryAbi abi;
  std::unique_ptr<FreeingCommitSink> sink;
  std::unique_ptr<SharedMemoryArbiter> arbiter;
};

Fixture* SharedFixture() {
  static Fixture* fixture = new Fixture();  // Thread-safe init; lives for the process.
  return fixture;
}

// payload 0: the small packet: 3 fields (timestamp, cpu in a nested bundle...)
// kept to ~32 bytes. Otherwise a print event carrying `payload` bytes.
inline void WritePacket(TraceWriter* writer, uint64_t i, const std::string& payload) {
  auto packet = writer->NewTracePacket();
  packet->WriteVarInt(TracePacket::kTimestampFieldNumber, 1000000000ull + i);
  packet->BeginNested(TracePacket::kFtraceEventsFieldNumber);
  packet->WriteVarInt(FtraceEventBundle::kCpuFieldNumber, 1);
  packet->BeginNested(FtraceEventBundle::kEventFieldNumber);
  packet->WriteVarInt(FtraceEvent::kPidFieldNumber, 4242);
  if (!payload.empty()) {
    packet->BeginNested(FtraceEvent::kPrintFieldNumber);
    packet->WriteString(PrintFtraceEvent::kBufFieldNumber, payload);
    packet->EndNested();
  }
  packet->EndNested();
  packet->EndNested();
}

void BM_TraceWriter(benchmark::State& state) {
  std::unique_ptr<TraceWriter> writer =
      SharedFixture()->arbiter->CreateTraceWriter(0, BufferExhaustedPolicy::kStall);
  size_t payload_size = static_cast<size_t>(state.range(0));
  std::string payload(payload_size, 'p');
  uint64_t i = 0;
  uint64_t bytes = 0;
  const ArbiterStats before = SharedFixture()->arbiter->stats();
  for (auto _ : state) {
    WritePacket(writer.get(), i++, payload);
  }
  bytes = i * (payload_size + 20);
  state.SetItemsProcessed(static_cast<int64_t>(i));
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["lost"] = static_cast<double>(writer->packets_lost());
  if (state.thread_index() == 0) {
    // Shared-state traffic per packet (all threads; approximate when threads
    // end at different times).
    const ArbiterStats after = SharedFixture()->arbiter->stats();
    const double packets = static_cast<double>(i) * state.threads();
    state.counters["chunks/pkt"] = (after.chunks_committed - before.chunks_committed) / packets;
    state.counters["patches/pkt"] = (after.patches_committed - before.patches_committed) / packets;
    state.counters["commits/pkt"] = (after.commit_calls - before.commit_calls) / packets;
    state.counters["acq_fail/pkt"] =
        (after.chunk_acquire_failures - before.chunk_acquire_failures) / packets;
  }
}
BENCHMARK(BM_TraceWriter)
    ->Arg(0)
    ->Arg(256)
    ->Arg(4096)
    ->Threads(1)
    ->Threads(2)
    ->UseRealTime();

// What a reader pays to ask for room before it takes more from the kernel
// (TraceWriter::RoomBytes: a scan of the SMB's page headers). An 8 MiB SMB
// of 32 KiB pages, as `sluice record` has, with the argument's percentage of
// its chunks taken (never returned). A reader asks for 256 KiB of room per
// 128 KiB of raw kernel pages (user/probes/ftrace/ftrace_reader_worker.h):
// the cost per 4 KiB kernel page is this figure / 32. Compare
// BM_MemcpyBaseline/4096 (one copy of a page).
void BM_RoomBytes(benchmark::State& state) {
  auto shm = std::move(SharedMemory::Create(8 << 20).value());
  SharedMemoryAbi abi(shm->start(), shm->size(), 32768);
  FreeingCommitSink sink(&abi);
  SharedMemoryArbiter arbiter(shm->start(), shm->size(), 32768, &sink);
  const uint32_t take = abi.num_pages() * static_cast<uint32_t>(state.range(0)) / 100;
  for (uint32_t i = 0; i < take; i++) benchmark::DoNotOptimize(arbiter.GetNewChunk());
  std::unique_ptr<TraceWriter> writer = arbiter.CreateTraceWriter(0, BufferExhaustedPolicy::kStall);
  uint64_t room = 0;
  for (auto _ : state) {
    room = writer->RoomBytes(256 * 1024);
    benchmark::DoNotOptimize(room);
  }
  state.counters["room_KiB"] = static_cast<double>(room) / 1024;
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RoomBytes)->Arg(0)->Arg(50)->Arg(90)->Arg(100);

// Baseline: memcpy of a packet's bytes into a 32 KiB ring (what a copy of the
// encoded packet would cost with no encoding at all).
void BM_MemcpyBaseline(benchmark::State& state) {
  size_t size = static_cast<size_t>(state.range(0)) + 20;
  std::vector<uint8_t> src(size, 1);
  std::vector<uint8_t> ring(32768 + size);
  size_t off = 0;
  for (auto _ : state) {
    memcpy(ring.data() + off, src.data(), size);
    benchmark::ClobberMemory();
    off += size;
    if (off > 32768) off = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * size));
}
BENCHMARK(BM_MemcpyBaseline)->Arg(0)->Arg(256)->Arg(4096)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
