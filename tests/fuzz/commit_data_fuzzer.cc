// Fuzzes the commit path: arbitrary SMB contents plus arbitrary CommitData,
// patches and writer registrations applied to a live session, then reads,
// the end of the session (final read, stats) and the producer's disconnect
// (SMB scrape). The service must not crash, hang, or read outside the SMB.
//
// Input: a sequence of 12-byte operations (see Op below); op 5 writes 8 bytes
// of the input into the SMB, so the SMB's contents are fuzzed too.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "perfetto/config/trace_config.pb.h"
#include "service/event_loop.h"
#include "service/tracing_service.h"
#include "shm/shm_abi.h"
#include "tests/fuzz/ipc_fuzz_util.h"

namespace sluice {
namespace {

constexpr uint32_t kSmbSize = 64 * 1024;
constexpr size_t kOpSize = 12;

void RunOne(const uint8_t* data, size_t size) {
  EventLoop loop;
  TracingService service(&loop, TracingServiceOptions{});
  AckingEndpoint endpoint;
  uint32_t page_size = 4096u << (size > 0 ? data[0] % 5 : 0);  // 4..64 KiB
  auto conn = service.ConnectProducer(&endpoint, ProducerOptions{"fuzz", kSmbSize, page_size});
  if (!conn.ok()) return;
  std::unique_ptr<ProducerEndpoint> producer = std::move(conn.value());
  endpoint.connection = producer.get();
  DataSourceDescriptor d;
  d.name = "fuzz.ds";
  producer->RegisterDataSource(d);
  auto consumer = service.ConnectConsumer();
  perfetto::protos::TraceConfig config;
  config.add_buffers()->set_size_kb(128);
  config.add_data_sources()->mutable_config()->set_name("fuzz.ds");
  if (!consumer->EnableTracing(config).ok()) return;
  loop.RunUntilIdle();
  const uint32_t buffer = 1;  // The first buffer of a fresh service.

  uint8_t* smb = producer->shm_start();
  const uint32_t smb_size = producer->shm_size();
  const uint32_t pages = smb_size / producer->shm_page_size();
  CommitDataSink* sink = producer->commit_data_sink();
  for (size_t off = 1; off + kOpSize <= size; off += kOpSize) {
    const uint8_t* b = data + off;
    uint32_t target = (b[3] & 1) ? buffer : b[3];
    CommitDataRequest req;
    switch (b[0] % 7) {
      case 0:  // Move a chunk.
        req.chunks_to_move.push_back(ChunkToMove{b[1] % (pages + 2), b[2] % 16u, target});
        if (b[4] & 1) req.flush_request_id = b[5];
        sink->CommitData(req);
        break;
      case 1: {  // Patch.
        ChunkPatch p;
        p.target_buffer = target;
        p.writer_id = static_cast<uint16_t>(b[1] | (b[2] & 3) << 8);
        p.chunk_id = b[4];
        p.offset = static_cast<uint32_t>(b[5] | b[6] << 8);
        memcpy(p.data, b + 7, 4);
        p.has_more_patches = b[11] & 1;
        req.chunks_to_patch.push_back(p);
        sink->CommitData(req);
        break;
      }
      case 2:
        sink->RegisterTraceWriter(static_cast<uint16_t>(b[1] | (b[2] & 3) << 8), target);
        break;
      case 3:
        sink->UnregisterTraceWriter(static_cast<uint16_t>(b[1] | (b[2] & 3) << 8));
        break;
      case 4: {
        Status st = consumer->ReadBuffers([](std::string_view) {});
        (void)st;
        break;
      }
      case 5: {  // SMB bytes.
        uint32_t at = (static_cast<uint32_t>(b[1] | b[2] << 8) * 8) % smb_size;
        memcpy(smb + at, b + 4, 8);
        break;
      }
      case 6: {  // A page header that says "these chunks are Complete".
        uint32_t page = b[1] % pages;
        uint32_t layout = 1 + b[2] % 5;
        uint32_t header = (layout << PageHeader::kLayoutShift) |
                          (static_cast<uint32_t>(b[4] | b[5] << 8 | b[6] << 16) & 0x0aaaaaaa);
        memcpy(smb + static_cast<size_t>(page) * producer->shm_page_size(), &header, 4);
        break;
      }
    }
  }
  // End of session: final flush (acked), stop, final read with stats.
  Status st = consumer->DisableTracing();
  (void)st;
  loop.RunUntilIdle();
  st = consumer->ReadBuffers([](std::string_view) {});
  producer.reset();  // Scrapes the SMB.
  loop.RunUntilIdle();
  consumer.reset();
  loop.RunUntilIdle();
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::RunOne(data, size);
  return 0;
}
