// TraceBuffer throughput (docs/PERFORMANCE.md, "TraceBuffer").
//
//   BM_Memcpy/<payload>     memcpy of the same chunk payloads into a ring of
//                           the same size: the baseline for BM_CopyChunk.
//   BM_CopyChunk/<payload>  CopyChunkUntrusted in the steady state of a full
//                           RING_BUFFER (every copy overwrites unread chunks).
//   BM_Read/<payload>       BeginRead + ReadNextTracePacket of a buffer filled
//                           with those chunks: packets out, fragments joined.
//   BM_CloneReadOnly/<payload>  CloneReadOnly of a full (wrapped) 64 MiB ring:
//                           map, fault in and copy. Bytes per second count
//                           the ring.
//   BM_CloneInto/<payload>  CloneInto a ring created and Prefault()ed
//                           beforehand (not timed): what `sluice clone` holds
//                           the service mutex for, per buffer.
//   BM_StreamingSession/<first lap MiB>  a streaming session's buffer from
//                           creation to release: a fresh 64 MiB ring, 48 MiB
//                           of 4080-byte chunks, a read every 2 MiB (a
//                           consumer writing the file). First lap 64: the
//                           ring before laps (the cursor goes round all of
//                           it); 4: TraceBuffer::kFirstLapBytes.
// <payload> is the chunk payload: 4080 (4 KiB page, one chunk) or 284 (4 KiB
// page split in 14 chunks of 292 bytes). Packets: 100 B, with one in 10 of
// 600 B and one in 50 of 3000 B (fragmented across chunks). Four writers,
// their chunks interleaved. Bytes per second count payload bytes (copy) and
// packet bytes (read).
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "service/trace_buffer.h"
#include "shm/shm_abi.h"

namespace sluice {
namespace {

constexpr size_t kRingSize = 64 << 20;
constexpr int kWriters = 4;

struct Chunk {
  uint16_t writer;
  uint16_t count;
  uint16_t flags;
  std::string payload;  // Exactly the chunk's payload size.
};

// Cuts a writer's packets into chunks of `payload` bytes like a TraceWriter:
// 4-byte size per fragment, continuation flags, unused tail zeroed.
void CutPackets(uint16_t writer, const std::vector<size_t>& sizes, size_t payload,
                std::vector<Chunk>* out) {
  Chunk cur{writer, 0, 0, {}};
  auto flush = [&] {
    cur.payload.resize(payload, '\0');
    out->push_back(cur);
    cur = Chunk{writer, 0, 0, {}};
  };
  for (size_t size : sizes) {
    size_t off = 0;
    for (;;) {
      if (payload - cur.payload.size() < kPacketHeaderSize + 1) flush();
      const size_t n = std::min(payload - cur.payload.size() - kPacketHeaderSize, size - off);
      const char header[4] = {static_cast<char>(0x80 | (n & 0x7f)),
                              static_cast<char>(0x80 | ((n >> 7) & 0x7f)),
                              static_cast<char>(0x80 | ((n >> 14) & 0x7f)),
                              static_cast<char>(n >> 21)};
      cur.payload.append(header, 4);
      cur.payload.append(n, static_cast<char>('a' + off % 26));
      if (off > 0 && cur.count == 0) cur.flags |= ChunkHeader::kFirstPacketContinuesFromPrevChunk;
      cur.count++;
      off += n;
      if (off == size) break;
      cur.flags |= ChunkHeader::kLastPacketContinuesOnNextChunk;
      flush();
    }
  }
  flush();
}

// About `total` bytes of chunks from kWriters writers, interleaved. Each
// writer's stream ends on a whole packet, so it can be replayed.
std::vector<Chunk> MakeChunks(size_t payload, size_t total, uint64_t* packet_bytes) {
  std::vector<std::vector<Chunk>> per_writer(kWriters);
  *packet_bytes = 0;
  const size_t per = total / kWriters;
  for (int w = 0; w < kWriters; w++) {
    std::vector<size_t> sizes;
    size_t bytes = 0;
    for (int i = 0; bytes < per; i++) {
      size_t s = i % 50 == 49 ? 3000 : i % 10 == 9 ? 600 : 100;
      sizes.push_back(s);
      bytes += s + kPacketHeaderSize;
      *packet_bytes += s;
    }
    CutPackets(static_cast<uint16_t>(w + 1), sizes, payload, &per_writer[w]);
  }
  std::vector<Chunk> out;
  for (size_t i = 0;; i++) {
    bool any = false;
    for (auto& chunks : per_writer) {
      if (i < chunks.size()) {
        out.push_back(chunks[i]);
        any = true;
      }
    }
    if (!any) break;
  }
  return out;
}

void BM_Memcpy(benchmark::State& state) {
  const size_t payload = static_cast<size_t>(state.range(0));
  uint64_t packet_bytes = 0;
  const std::vector<Chunk> chunks = MakeChunks(payload, 8 << 20, &packet_bytes);
  // The same kind of memory as TraceBuffer's ring: anonymous, huge-page hint.
  void* mem = mmap(nullptr, kRingSize, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  madvise(mem, kRingSize, MADV_HUGEPAGE);
  uint8_t* ring = static_cast<uint8_t*>(mem);
  memset(ring, 0, kRingSize);
  size_t i = 0, off = 0;
  for (auto _ : state) {
    const Chunk& c = chunks[i];
    if (++i == chunks.size()) i = 0;
    if (off + c.payload.size() > kRingSize) off = 0;
    memcpy(ring + off, c.payload.data(), c.payload.size());
    benchmark::DoNotOptimize(ring + off);
    off += c.payload.size();
  }
  munmap(mem, kRingSize);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * payload));
}

void BM_CopyChunk(benchmark::State& state) {
  const size_t payload = static_cast<size_t>(state.range(0));
  uint64_t packet_bytes = 0;
  const std::vector<Chunk> chunks = MakeChunks(payload, 8 << 20, &packet_bytes);
  auto tb = TraceBuffer::Create(kRingSize, TraceBuffer::FillPolicy::kRingBuffer);
  uint32_t next_id[kWriters + 1] = {};
  size_t i = 0;
  auto copy_next = [&] {
    const Chunk& c = chunks[i];
    if (++i == chunks.size()) i = 0;
    tb->CopyChunkUntrusted(1, 1000, c.writer, next_id[c.writer]++, c.count, c.flags,
                           reinterpret_cast<const uint8_t*>(c.payload.data()), c.payload.size());
  };
  // Fill the ring first: the steady state overwrites.
  for (size_t n = 0; n < 2 * kRingSize / payload; n++) copy_next();
  for (auto _ : state) copy_next();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * payload));
  state.counters["overwritten"] = static_cast<double>(tb->stats().chunks_overwritten);
  if (tb->stats().abi_violations != 0) state.SkipWithError("chunks rejected");
}

void BM_Read(benchmark::State& state) {
  const size_t payload = static_cast<size_t>(state.range(0));
  uint64_t packet_bytes = 0;
  const std::vector<Chunk> chunks = MakeChunks(payload, 24 << 20, &packet_bytes);
  auto tb = TraceBuffer::Create(32 << 20, TraceBuffer::FillPolicy::kRingBuffer);
  uint32_t next_id[kWriters + 1] = {};
  std::string packet;
  uint64_t bytes_out = 0, packets_out = 0;
  for (auto _ : state) {
    state.PauseTiming();
    for (const Chunk& c : chunks)
      tb->CopyChunkUntrusted(1, 1000, c.writer, next_id[c.writer]++, c.count, c.flags,
                             reinterpret_cast<const uint8_t*>(c.payload.data()),
                             c.payload.size());
    state.ResumeTiming();
    tb->BeginRead();
    TraceBuffer::PacketSequenceProperties seq;
    bool dropped = false;
    while (tb->ReadNextTracePacket(&packet, &seq, &dropped)) {
      bytes_out += packet.size();
      packets_out++;
    }
  }
  if (bytes_out != state.iterations() * packet_bytes) state.SkipWithError("packets lost");
  state.SetBytesProcessed(static_cast<int64_t>(bytes_out));
  state.counters["packets/s"] =
      benchmark::Counter(static_cast<double>(packets_out), benchmark::Counter::kIsRate);
}

// A 64 MiB RING_BUFFER that wrapped and is full of unread chunks of
// `payload` bytes: the most a clone copies.
std::unique_ptr<TraceBuffer> FullRing(size_t payload) {
  uint64_t packet_bytes = 0;
  const std::vector<Chunk> chunks = MakeChunks(payload, 8 << 20, &packet_bytes);
  auto tb = TraceBuffer::Create(kRingSize, TraceBuffer::FillPolicy::kRingBuffer);
  uint32_t next_id[kWriters + 1] = {};
  for (size_t n = 0, i = 0; n < 2 * kRingSize / payload; n++, i = (i + 1) % chunks.size()) {
    const Chunk& c = chunks[i];
    tb->CopyChunkUntrusted(1, 1000, c.writer, next_id[c.writer]++, c.count, c.flags,
                           reinterpret_cast<const uint8_t*>(c.payload.data()), c.payload.size());
  }
  return tb;
}

void BM_CloneReadOnly(benchmark::State& state) {
  const std::unique_ptr<TraceBuffer> tb = FullRing(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    std::unique_ptr<TraceBuffer> clone = tb->CloneReadOnly();
    benchmark::DoNotOptimize(clone.get());
    state.PauseTiming();
    if (!clone) state.SkipWithError("no memory for the clone");
    clone.reset();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kRingSize));
  state.counters["unread_chunks"] = static_cast<double>(tb->stats().chunks_written - tb->stats().chunks_overwritten);
}

void BM_CloneInto(benchmark::State& state) {
  const std::unique_ptr<TraceBuffer> tb = FullRing(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    state.PauseTiming();
    auto copy = TraceBuffer::Create(kRingSize, TraceBuffer::FillPolicy::kRingBuffer);
    copy->Prefault(tb->used_size());
    state.ResumeTiming();
    if (!tb->CloneInto(copy.get())) state.SkipWithError("clone refused");
    benchmark::DoNotOptimize(copy.get());
    state.PauseTiming();
    copy.reset();
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kRingSize));
}

void BM_StreamingSession(benchmark::State& state) {
  const size_t first_lap = static_cast<size_t>(state.range(0)) << 20;
  constexpr size_t kPayload = 4080;
  constexpr size_t kStreamed = 48 << 20, kReadEvery = 2 << 20;
  uint64_t packet_bytes = 0;
  const std::vector<Chunk> chunks = MakeChunks(kPayload, kReadEvery, &packet_bytes);
  std::string packet;
  size_t lap = 0;
  for (auto _ : state) {
    auto tb = TraceBuffer::Create(kRingSize, TraceBuffer::FillPolicy::kRingBuffer, first_lap);
    uint32_t next_id[kWriters + 1] = {};
    for (size_t streamed = 0; streamed < kStreamed; streamed += kReadEvery) {
      for (const Chunk& c : chunks)
        tb->CopyChunkUntrusted(1, 1000, c.writer, next_id[c.writer]++, c.count, c.flags,
                               reinterpret_cast<const uint8_t*>(c.payload.data()),
                               c.payload.size());
      tb->BeginRead();
      TraceBuffer::PacketSequenceProperties seq;
      bool dropped = false;
      while (tb->ReadNextTracePacket(&packet, &seq, &dropped))
        benchmark::DoNotOptimize(packet.data());
    }
    if (tb->stats().chunks_overwritten != 0) state.SkipWithError("chunks overwritten");
    lap = tb->lap_size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kStreamed));
  state.counters["lap_MiB"] = static_cast<double>(lap >> 20);
}

BENCHMARK(BM_Memcpy)->Arg(4080)->Arg(284);
BENCHMARK(BM_CopyChunk)->Arg(4080)->Arg(284);
BENCHMARK(BM_Read)->Arg(4080)->Arg(284)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CloneReadOnly)->Arg(4080)->Arg(284)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CloneInto)->Arg(4080)->Arg(284)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StreamingSession)->Arg(64)->Arg(4)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
