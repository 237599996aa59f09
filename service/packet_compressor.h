// PacketCompressor: packs trace packets into compressed containers, the form
// upstream Perfetto (v58) writes when TraceConfig.compression asks for it:
//
//   ┌──────┬─────┬───────────────────────────────────────────────────────┐
//   │ 0x0A │ len │ TracePacket { zstd_compressed_packets (133) = frame } │
//   └──────┴─────┴───────────────────────────────────────────────────────┘
//                   frame, decompressed: 0x0A len TracePacket 0x0A len ...
//
// One container holds one zstd frame (or, for deflate, one zlib stream in
// compressed_packets, field 50) of whole Trace.packet records, and nothing
// else: upstream's trace processor decodes exactly one frame per container
// and refuses trailing bytes, a trace that mixes the two codecs, and a
// container inside a container. A container takes at most kMaxInputBytes of
// records (one larger packet goes alone), so even incompressible data stays
// under upstream's 512 KiB per compressed packet.
//
// Steady state allocates nothing: the zstd context (or zlib stream) is made
// once and reset for each container, which keeps its work space; records are
// fed to it as they come (streaming, no copy of the batch), and the output
// buffer, sized for the worst case of a full container, is reused. Finish()
// returns the container's record in that buffer, its header written in
// front of the compressed bytes. Only a single packet larger than
// kMaxInputBytes grows the buffer.
//
// Not thread-safe.
#ifndef SLUICE_SERVICE_PACKET_COMPRESSOR_H_
#define SLUICE_SERVICE_PACKET_COMPRESSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "shm/base/status.h"

namespace perfetto::protos {
class TraceConfig;
}

namespace sluice {

enum class TraceCodec : uint8_t { kNone, kDeflate, kZstd };

// What a session's file is compressed with.
struct TraceCompression {
  TraceCodec codec = TraceCodec::kNone;
  int level = 0;  // zstd's level; 0: zstd's default (3). Deflate: zlib's default.
  bool enabled() const { return codec != TraceCodec::kNone; }
  bool operator==(const TraceCompression&) const = default;
};

// The compression `config` asks for: compression.zstd, else
// compression.deflate or the legacy compression_type DEFLATE, else none (a
// codec sluice does not know, set alone, is ignored as upstream does).
TraceCompression TraceCompressionOf(const perfetto::protos::TraceConfig& config);
// Sets `config`'s compression to `c` (clears it for none, and clears the
// legacy compression_type either way).
void SetTraceCompression(TraceCompression c, perfetto::protos::TraceConfig* config);
// "zstd", "zstd:LEVEL", "deflate" or "none" (`sluice record --compress`).
StatusOr<TraceCompression> ParseTraceCompression(std::string_view text);
// "zstd (level 3)", "deflate", "none".
std::string DescribeTraceCompression(TraceCompression c);

class PacketCompressor {
 public:
  // Records one container takes at most (a single larger one goes alone):
  // compressed, even incompressible ones stay under 512 KiB (zstd and zlib
  // add well under 1% to data they cannot shrink).
  static constexpr size_t kMaxInputBytes = 500 * 1024;
  // The largest zstd level (ZSTD_maxCLevel() of libzstd 1.5).
  static constexpr int kMaxZstdLevel = 22;

  // Fails only if the codec cannot be set up (out of memory). `c` must not
  // be kNone.
  static StatusOr<std::unique_ptr<PacketCompressor>> Create(TraceCompression c);
  ~PacketCompressor();
  PacketCompressor(const PacketCompressor&) = delete;
  PacketCompressor& operator=(const PacketCompressor&) = delete;

  TraceCompression compression() const { return compression_; }

  // Whether a record of `record_bytes` (TracePacketRecordSize) joins the open
  // container: it is empty, or the record keeps it within kMaxInputBytes.
  // When not, Finish() it first.
  bool Fits(size_t record_bytes) const {
    return input_bytes_ == 0 || input_bytes_ + record_bytes <= kMaxInputBytes;
  }
  // Adds `packet` to the open container as a Trace.packet record (opening
  // one if none is).
  Status Add(std::string_view packet);

  bool empty() const { return packets_ == 0; }
  // Packets, and their record bytes before compression, in the open container.
  uint64_t packets() const { return packets_; }
  uint64_t input_bytes() const { return input_bytes_; }

  // Closes the open container and returns its Trace.packet record (empty if
  // no packet was added): valid until the next Add, Finish or Discard.
  StatusOr<std::string_view> Finish();
  // Drops the open container (its packets will not be written).
  void Discard();

 private:
  explicit PacketCompressor(TraceCompression c);
  Status Open();
  // Feeds `n` bytes to the codec, growing the output buffer if it is full.
  Status Feed(const void* data, size_t n);
  Status EnsureOutputRoom(size_t bytes);

  const TraceCompression compression_;
  struct Codec;
  std::unique_ptr<Codec> codec_;
  uint64_t packets_ = 0;
  uint64_t input_bytes_ = 0;
  // Header room, then the compressed bytes of the open container.
  std::unique_ptr<char[]> out_;
  size_t out_capacity_ = 0;
  size_t out_used_ = 0;  // Compressed bytes after the header room.
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_PACKET_COMPRESSOR_H_
