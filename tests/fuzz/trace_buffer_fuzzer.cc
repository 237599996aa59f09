// Fuzzes TraceBuffer with a sequence of operations decoded from the input:
// chunk copies with arbitrary header fields and payloads (well-formed
// fragments, broken ones, or raw bytes), recommits, patches, read passes that
// stay open across other operations, final reads and producers going away.
// A small ring makes wrapping, overwriting and DISCARD-full frequent, and a
// short first lap makes laps grow. After every operation the ring and the
// index must agree (CheckInvariantsForTesting); sanitizers catch the rest.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "service/trace_buffer.h"
#include "shm/shm_abi.h"

namespace sluice {
namespace {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t U8() { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t U16() { return static_cast<uint16_t>(U8() | (U8() << 8)); }
  uint32_t U32() { return static_cast<uint32_t>(U16() | (uint32_t{U16()} << 16)); }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

void Check(bool ok, int line = __builtin_LINE()) {
  if (ok) return;
  fprintf(stderr, "trace_buffer_fuzzer.cc:%d: check failed\n", line);
  abort();
}

// Payload of `count` fragments; some size headers may be made invalid.
std::string MakePayload(Input* in, uint16_t* count) {
  std::string p;
  const uint8_t mode = in->U8();
  if (mode % 4 == 0) {  // Raw bytes.
    p.resize(in->U8() * 2);
    for (char& c : p) c = static_cast<char>(in->U8());
    *count = static_cast<uint16_t>(in->U8() % 6);
    if (mode & 0x80) *count = in->U16();
    return p;
  }
  *count = static_cast<uint16_t>(in->U8() % 6);
  for (uint16_t i = 0; i < *count; i++) {
    uint32_t n = in->U8() % 80;
    if (in->U8() % 16 == 0) n += 1000;  // Past the end.
    char header[4] = {static_cast<char>(0x80 | (n & 0x7f)),
                      static_cast<char>(0x80 | ((n >> 7) & 0x7f)),
                      static_cast<char>(0x80 | ((n >> 14) & 0x7f)), static_cast<char>(n >> 21)};
    if (in->U8() % 32 == 0) header[in->U8() % 4] ^= static_cast<char>(0x80);  // Bad varint.
    p.append(header, 4);
    p.append(std::min<uint32_t>(n, 80), static_cast<char>('a' + i));
  }
  p.resize(p.size() + in->U8() % 8, '\0');  // Unused tail.
  return p;
}

void Run(const uint8_t* data, size_t size) {
  Input in(data, size);
  const uint8_t setup = in.U8();
  const size_t ring = 64 + (setup & 0x3f) * 48;
  auto policy = (setup & 0x40) ? TraceBuffer::FillPolicy::kDiscard
                               : TraceBuffer::FillPolicy::kRingBuffer;
  // Half the inputs start with a lap shorter than the ring, so that laps
  // grow (and move records) under every other operation.
  const size_t first_lap = (setup & 0x80) ? 16 * (1 + in.U8() % 16) : ring;
  auto tb = TraceBuffer::Create(ring, policy, first_lap);
  Check(tb != nullptr);
  uint32_t next_id[5] = {};
  bool pass_open = false;
  std::string packet;
  for (int ops = 0; !in.empty() && ops < 4000; ops++) {
    const uint8_t op = in.U8();
    const uint16_t producer = static_cast<uint16_t>(1 + (op >> 7));
    switch (op % 8) {
      case 0:
      case 1:
      case 2:
      case 3: {  // Copy (or recommit) a chunk.
        const uint8_t w = in.U8();
        uint16_t writer = static_cast<uint16_t>(w % 5);
        if (w == 0xff) writer = 1024;
        uint32_t id;
        const uint8_t how = in.U8();
        if (how < 200) {
          id = next_id[writer % 5] + (how % 4) - 1;  // Mostly in order, some repeats and holes.
          if (how % 4 != 0) next_id[writer % 5] = id + 1;
        } else {
          id = in.U32();
        }
        const uint16_t flags = static_cast<uint16_t>(in.U8() & 0x3f);
        uint16_t count = 0;
        std::string payload = MakePayload(&in, &count);
        const bool complete = in.U8() % 8 != 0;
        tb->CopyChunkUntrusted(producer, producer * 10u, writer, id, count, flags,
                               reinterpret_cast<const uint8_t*>(payload.data()), payload.size(),
                               complete);
        break;
      }
      case 4: {  // Patch.
        const uint16_t writer = static_cast<uint16_t>(in.U8() % 5);
        const uint32_t id = next_id[writer] - 1 - in.U8() % 3;
        ChunkPatch patches[3];
        const size_t n = in.U8() % 4;
        for (size_t i = 0; i < n && i < 3; i++) {
          patches[i].offset = in.U8() % 2 ? in.U8() : in.U32();
          for (uint8_t& b : patches[i].data) b = in.U8();
        }
        tb->TryPatchChunkContents(producer, writer, id, patches, n < 3 ? n : 3, in.U8() % 2);
        break;
      }
      case 5:  // Start a pass, maybe the final one.
        tb->BeginRead(in.U8() % 4 == 0 ? TraceBuffer::ReadMode::kFinal
                                       : TraceBuffer::ReadMode::kIncremental);
        pass_open = true;
        break;
      case 6: {  // Read a few packets of the open pass.
        if (!pass_open) break;
        TraceBuffer::PacketSequenceProperties seq;
        bool dropped = false;
        for (int i = in.U8() % 16; i > 0; i--) {
          if (!tb->ReadNextTracePacket(&packet, &seq, &dropped)) {
            pass_open = false;
            break;
          }
          Check(!packet.empty() && packet.size() <= ring);
          Check(seq.writer >= 1 && seq.writer <= kMaxWriterId);
          Check(seq.producer_uid == seq.producer * 10u);
        }
        break;
      }
      case 7: {  // The producer gone, or chunks of a writer known lost.
        const uint8_t how = in.U8();
        if (how < 128) {
          tb->MarkProducerGone(producer);
        } else {
          const uint16_t writer = static_cast<uint16_t>(how % 5);
          tb->MarkChunksLost(producer, writer, next_id[writer] + in.U8() % 4 - 1);
        }
        break;
      }
    }
    Check(tb->CheckInvariantsForTesting());
  }
  // Drain everything at the end, as at the end of a session.
  tb->BeginRead(TraceBuffer::ReadMode::kFinal);
  TraceBuffer::PacketSequenceProperties seq;
  bool dropped = false;
  while (tb->ReadNextTracePacket(&packet, &seq, &dropped)) Check(!packet.empty());
  Check(tb->CheckInvariantsForTesting());
  const TraceBufferStats& s = tb->stats();
  Check(s.bytes_read <= s.bytes_written && s.chunks_read <= s.chunks_written);
}

}  // namespace
}  // namespace sluice

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sluice::Run(data, size);
  return 0;
}
