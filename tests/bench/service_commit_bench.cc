// The CommitData path end to end, in one process: chunks completed in a
// producer's SMB, committed through the in-process CommitDataSink, copied out
// of the SMB (ReadChunkUntrusted) and into the session's TraceBuffer.
// Figures are in docs/PERFORMANCE.md, "## Service".
//
//   BM_CommitChunks/<page KiB>/<chunks per commit>
//     Chunks prepared in the SMB with the timer paused (a memcpy of a
//     template and the Complete CAS), then one CommitData per batch, timed.
//     bytes/s = chunk payload moved from the SMB into the TraceBuffer.
//   BM_WriterToTraceBuffer/<packet bytes>
//     The whole producer path as well: SmbTraceWriter encodes packets into
//     chunks, the arbiter commits them, the service moves them.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <vector>

#include "perfetto/config/trace_config.pb.h"
#include "service/event_loop.h"
#include "service/tracing_service.h"
#include "shm/proto_writer.h"
#include "shm/shared_memory_arbiter.h"
#include "shm/shm_abi.h"

namespace sluice {
namespace {

using NullEndpoint = ProducerWithoutDataSources;

// A service with one producer and one session whose 64 MiB ring buffer takes
// the producer's data source.
struct Setup {
  explicit Setup(uint32_t page_size, uint32_t smb_size = 8u << 20) {
    service = std::make_unique<TracingService>(&loop, TracingServiceOptions{});
    auto conn = service->ConnectProducer(&endpoint, ProducerOptions{"bench", smb_size, page_size});
    producer = std::move(conn.value());
    producer->RegisterDataSource(DataSourceDescriptor{"bench.ds"});
    consumer = service->ConnectConsumer();
    perfetto::protos::TraceConfig config;
    config.add_buffers()->set_size_kb(64 * 1024);
    config.add_data_sources()->mutable_config()->set_name("bench.ds");
    Status st = consumer->EnableTracing(config);
    (void)st;
    loop.RunUntilIdle();
  }
  ~Setup() {
    producer.reset();
    consumer.reset();
    loop.RunUntilIdle();
    service.reset();
  }
  static constexpr uint32_t kBuffer = 1;  // First buffer id of a fresh service.

  EventLoop loop;
  NullEndpoint endpoint;
  std::unique_ptr<TracingService> service;
  std::unique_ptr<ProducerEndpoint> producer;
  std::unique_ptr<ConsumerEndpoint> consumer;
};

// A chunk payload full of 500-byte packets.
std::vector<uint8_t> TemplateChunk(uint32_t chunk_size, uint16_t* packets) {
  std::vector<uint8_t> chunk(chunk_size, 0xab);
  uint32_t off = sizeof(ChunkHeader);
  uint16_t n = 0;
  while (off + 4 + 500 <= chunk_size) {
    ProtoWriter::WriteRedundantVarInt(500, chunk.data() + off);
    off += 504;
    n++;
  }
  *packets = n;
  return chunk;
}

void BM_CommitChunks(benchmark::State& state) {
  const uint32_t page_size = static_cast<uint32_t>(state.range(0)) * 1024;
  const uint32_t batch = static_cast<uint32_t>(state.range(1));
  Setup s(page_size);
  SharedMemoryAbi abi(s.producer->shm_start(), s.producer->shm_size(), page_size);
  const uint32_t chunk_size = ChunkSizeFor(page_size, PageLayout::kDiv1);
  uint16_t packets = 0;
  std::vector<uint8_t> tmpl = TemplateChunk(chunk_size, &packets);
  s.producer->commit_data_sink()->RegisterTraceWriter(1, Setup::kBuffer);
  uint32_t chunk_id = 0;
  uint32_t next_page = 0;
  CommitDataRequest req;
  req.chunks_to_move.reserve(batch);
  for (auto _ : state) {
    state.PauseTiming();
    req.chunks_to_move.clear();
    for (uint32_t i = 0; i < batch; i++) {
      uint32_t page = next_page++ % abi.num_pages();
      abi.TryPartitionPage(page, PageLayout::kDiv1);
      uint8_t* c = abi.chunk_begin(page, PageLayout::kDiv1, 0);
      memcpy(c, tmpl.data(), tmpl.size());
      ChunkHeader h{chunk_id++, 1, ChunkHeader::PackPackets(packets, 0)};
      memcpy(c, &h, sizeof(h));
      abi.MarkChunkComplete(page, 0);
      req.chunks_to_move.push_back(ChunkToMove{page, 0, Setup::kBuffer});
    }
    state.ResumeTiming();
    s.producer->commit_data_sink()->CommitData(req);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * batch);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * batch *
                          (chunk_size - sizeof(ChunkHeader)));
  state.counters["violations"] = static_cast<double>(s.service->GetServiceStats().abi_violations);
}
BENCHMARK(BM_CommitChunks)
    ->Args({4, 1})
    ->Args({4, 64})
    ->Args({16, 64})
    ->Args({64, 16})
    ->Args({64, 64});

void BM_WriterToTraceBuffer(benchmark::State& state) {
  const size_t packet_bytes = static_cast<size_t>(state.range(0));
  Setup s(4096);
  SharedMemoryArbiter arbiter(s.producer->shm_start(), s.producer->shm_size(), 4096,
                              s.producer->commit_data_sink());
  auto writer = arbiter.CreateTraceWriter(Setup::kBuffer, BufferExhaustedPolicy::kStall);
  std::vector<uint8_t> payload(packet_bytes, 0x5a);
  for (auto _ : state) {
    auto packet = writer->NewTracePacket();
    packet->WriteBytes(36, payload.data(), payload.size());
  }
  writer->Flush();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * packet_bytes));
  state.counters["lost"] = static_cast<double>(writer->packets_lost());
  state.counters["chunks"] = static_cast<double>(s.service->GetServiceStats().chunks_moved);
  writer.reset();
}
BENCHMARK(BM_WriterToTraceBuffer)->Arg(64)->Arg(500)->Arg(4000);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
