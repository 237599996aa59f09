#include "service/packet_compressor.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "perfetto/config/trace_config.pb.h"
#include "shm/base/varint.h"

namespace sluice {
namespace {

using perfetto::protos::TraceConfig;

// TracePacket.compressed_packets (50) and .zstd_compressed_packets (133),
// length-delimited: (field << 3) | 2.
constexpr uint64_t kDeflateFieldTag = (50 << 3) | 2;
constexpr uint64_t kZstdFieldTag = (133 << 3) | 2;
// Room before the compressed bytes for the container's record header: the
// Trace.packet tag and length, the field's tag and length.
constexpr size_t kHeaderRoom = 1 + kMaxVarIntSize + 2 + kMaxVarIntSize;
// A frame never spans more than a container's input, so a window that holds
// one (512 KiB) loses nothing, and a reader needs no more memory for it
// than that (zstd's default for input of unknown size is up to 8 MiB).
constexpr int kZstdWindowLog = 19;

// Worst-case compressed size of `n` input bytes, with room for the codec's
// own framing.
size_t CompressedBound(TraceCodec codec, size_t n) {
  return (codec == TraceCodec::kZstd ? ZSTD_compressBound(n) : compressBound(static_cast<uLong>(n))) + 64;
}

}  // namespace

TraceCompression TraceCompressionOf(const TraceConfig& config) {
  // The highest-numbered codec set wins (upstream's rule).
  if (config.has_compression()) {
    const auto& c = config.compression();
    if (c.has_zstd()) return {TraceCodec::kZstd, c.zstd().level()};
    if (c.has_deflate()) return {TraceCodec::kDeflate, 0};
  }
  if (config.compression_type() == TraceConfig::COMPRESSION_TYPE_DEFLATE) return {TraceCodec::kDeflate, 0};
  return {};
}

void SetTraceCompression(TraceCompression c, TraceConfig* config) {
  config->clear_compression_type();
  config->clear_compression();
  switch (c.codec) {
    case TraceCodec::kNone: break;
    case TraceCodec::kDeflate: config->mutable_compression()->mutable_deflate(); break;
    case TraceCodec::kZstd: {
      auto* zstd = config->mutable_compression()->mutable_zstd();
      if (c.level != 0) zstd->set_level(c.level);
      break;
    }
  }
}

StatusOr<TraceCompression> ParseTraceCompression(std::string_view text) {
  if (text == "none") return TraceCompression{};
  if (text == "deflate") return TraceCompression{TraceCodec::kDeflate, 0};
  if (text == "zstd") return TraceCompression{TraceCodec::kZstd, 0};
  if (text.starts_with("zstd:")) {
    const std::string level(text.substr(5));
    char* end = nullptr;
    errno = 0;
    const long v = level.empty() ? 0 : strtol(level.c_str(), &end, 10);
    if (!level.empty() && *end == '\0' && errno == 0 && v >= ZSTD_minCLevel() && v <= ZSTD_maxCLevel() &&
        v != 0)
      return TraceCompression{TraceCodec::kZstd, static_cast<int>(v)};
    return Status::Error("zstd level '" + level + "' is not a number from 1 (fastest) to " +
                         std::to_string(ZSTD_maxCLevel()) + " (smallest), or negative for zstd's faster modes");
  }
  return Status::Error("unknown compression '" + std::string(text) +
                       "': give zstd, zstd:LEVEL (1-" + std::to_string(ZSTD_maxCLevel()) +
                       "), deflate or none");
}

std::string DescribeTraceCompression(TraceCompression c) {
  switch (c.codec) {
    case TraceCodec::kNone: return "none";
    case TraceCodec::kDeflate: return "deflate";
    case TraceCodec::kZstd:
      return "zstd (level " + std::to_string(c.level == 0 ? ZSTD_CLEVEL_DEFAULT : c.level) + ")";
  }
  return "?";
}

// The codec's state: one zstd context or zlib stream for the writer's life.
struct PacketCompressor::Codec {
  ZSTD_CCtx* zstd = nullptr;
  z_stream zlib{};
  bool zlib_ready = false;
  ~Codec() {
    if (zstd) ZSTD_freeCCtx(zstd);
    if (zlib_ready) deflateEnd(&zlib);
  }
};

StatusOr<std::unique_ptr<PacketCompressor>> PacketCompressor::Create(TraceCompression c) {
  if (!c.enabled()) return Status::Error("PacketCompressor needs a codec");
  std::unique_ptr<PacketCompressor> p(new PacketCompressor(c));
  p->codec_ = std::make_unique<Codec>();
  if (c.codec == TraceCodec::kZstd) {
    p->codec_->zstd = ZSTD_createCCtx();
    if (!p->codec_->zstd) return Status::Error("cannot allocate a zstd context (out of memory)");
    // zstd maps level 0 to its default and clamps levels past its range.
    size_t rc = ZSTD_CCtx_setParameter(p->codec_->zstd, ZSTD_c_compressionLevel, c.level);
    if (!ZSTD_isError(rc)) rc = ZSTD_CCtx_setParameter(p->codec_->zstd, ZSTD_c_windowLog, kZstdWindowLog);
    // 4 bytes a frame, so that a reader tells a damaged frame from data.
    if (!ZSTD_isError(rc)) rc = ZSTD_CCtx_setParameter(p->codec_->zstd, ZSTD_c_checksumFlag, 1);
    if (ZSTD_isError(rc)) return Status::Error(std::string("zstd: ") + ZSTD_getErrorName(rc));
  } else {
    if (deflateInit(&p->codec_->zlib, Z_DEFAULT_COMPRESSION) != Z_OK)
      return Status::Error("cannot set up zlib's deflate (out of memory)");
    p->codec_->zlib_ready = true;
  }
  p->out_capacity_ = kHeaderRoom + CompressedBound(c.codec, kMaxInputBytes);
  p->out_ = std::make_unique_for_overwrite<char[]>(p->out_capacity_);
  return p;
}

PacketCompressor::PacketCompressor(TraceCompression c) : compression_(c) {}
PacketCompressor::~PacketCompressor() = default;

Status PacketCompressor::Open() {
  out_used_ = 0;
  if (compression_.codec == TraceCodec::kZstd) {
    // A new frame, the same parameters and work space.
    const size_t rc = ZSTD_CCtx_reset(codec_->zstd, ZSTD_reset_session_only);
    if (ZSTD_isError(rc)) return Status::Error(std::string("zstd: ") + ZSTD_getErrorName(rc));
  } else if (deflateReset(&codec_->zlib) != Z_OK) {
    return Status::Error("zlib's deflateReset failed");
  }
  return Status::Ok();
}

Status PacketCompressor::EnsureOutputRoom(size_t bytes) {
  if (kHeaderRoom + out_used_ + bytes <= out_capacity_) return Status::Ok();
  const size_t capacity = std::max(out_capacity_ * 2, kHeaderRoom + out_used_ + bytes);
  auto bigger = std::make_unique_for_overwrite<char[]>(capacity);
  memcpy(bigger.get(), out_.get(), kHeaderRoom + out_used_);
  out_ = std::move(bigger);
  out_capacity_ = capacity;
  return Status::Ok();
}

Status PacketCompressor::Feed(const void* data, size_t n) {
  if (compression_.codec == TraceCodec::kZstd) {
    ZSTD_inBuffer in{data, n, 0};
    while (in.pos < in.size) {
      if (kHeaderRoom + out_used_ == out_capacity_) SLUICE_RETURN_IF_ERROR(EnsureOutputRoom(64 << 10));
      ZSTD_outBuffer out{out_.get() + kHeaderRoom, out_capacity_ - kHeaderRoom, out_used_};
      const size_t rc = ZSTD_compressStream2(codec_->zstd, &out, &in, ZSTD_e_continue);
      if (ZSTD_isError(rc)) return Status::Error(std::string("zstd: ") + ZSTD_getErrorName(rc));
      out_used_ = out.pos;
    }
    return Status::Ok();
  }
  z_stream& zs = codec_->zlib;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<void*>(data));
  zs.avail_in = static_cast<uInt>(n);
  while (zs.avail_in > 0) {
    if (kHeaderRoom + out_used_ == out_capacity_) SLUICE_RETURN_IF_ERROR(EnsureOutputRoom(64 << 10));
    zs.next_out = reinterpret_cast<Bytef*>(out_.get() + kHeaderRoom + out_used_);
    zs.avail_out = static_cast<uInt>(out_capacity_ - kHeaderRoom - out_used_);
    const uInt before = zs.avail_out;
    if (deflate(&zs, Z_NO_FLUSH) == Z_STREAM_ERROR) return Status::Error("zlib's deflate failed");
    out_used_ += before - zs.avail_out;
  }
  return Status::Ok();
}

Status PacketCompressor::Add(std::string_view packet) {
  if (packets_ == 0) SLUICE_RETURN_IF_ERROR(Open());
  const size_t record = TracePacketRecordSize(packet.size());
  // A single packet larger than a container: the buffer grows for it (the
  // only allocation after the first container).
  if (input_bytes_ + record > kMaxInputBytes) {
    const size_t bound = CompressedBound(compression_.codec, input_bytes_ + record);
    if (bound > out_used_) SLUICE_RETURN_IF_ERROR(EnsureOutputRoom(bound - out_used_));
  }
  uint8_t header[1 + kMaxVarIntSize];
  header[0] = kTracePacketTag;
  const size_t header_size = static_cast<size_t>(EncodeVarInt(packet.size(), header + 1) - header);
  SLUICE_RETURN_IF_ERROR(Feed(header, header_size));
  SLUICE_RETURN_IF_ERROR(Feed(packet.data(), packet.size()));
  packets_++;
  input_bytes_ += record;
  return Status::Ok();
}

StatusOr<std::string_view> PacketCompressor::Finish() {
  if (packets_ == 0) return std::string_view();
  if (compression_.codec == TraceCodec::kZstd) {
    // ZSTD_e_end until it says nothing is left: the frame's last block and
    // its checksum.
    for (;;) {
      if (kHeaderRoom + out_used_ == out_capacity_) SLUICE_RETURN_IF_ERROR(EnsureOutputRoom(64 << 10));
      ZSTD_outBuffer out{out_.get() + kHeaderRoom, out_capacity_ - kHeaderRoom, out_used_};
      ZSTD_inBuffer in{nullptr, 0, 0};
      const size_t left = ZSTD_compressStream2(codec_->zstd, &out, &in, ZSTD_e_end);
      if (ZSTD_isError(left)) return Status::Error(std::string("zstd: ") + ZSTD_getErrorName(left));
      out_used_ = out.pos;
      if (left == 0) break;
    }
  } else {
    z_stream& zs = codec_->zlib;
    zs.next_in = nullptr;
    zs.avail_in = 0;
    for (;;) {
      if (kHeaderRoom + out_used_ == out_capacity_) SLUICE_RETURN_IF_ERROR(EnsureOutputRoom(64 << 10));
      zs.next_out = reinterpret_cast<Bytef*>(out_.get() + kHeaderRoom + out_used_);
      zs.avail_out = static_cast<uInt>(out_capacity_ - kHeaderRoom - out_used_);
      const uInt before = zs.avail_out;
      const int rc = deflate(&zs, Z_FINISH);
      out_used_ += before - zs.avail_out;
      if (rc == Z_STREAM_END) break;
      if (rc != Z_OK && rc != Z_BUF_ERROR) return Status::Error("zlib's deflate failed");
    }
  }
  // The header, right-aligned against the compressed bytes: Trace.packet
  // tag and length, then the field's tag and length.
  uint8_t field[2 * kMaxVarIntSize];
  uint8_t* f = EncodeVarInt(compression_.codec == TraceCodec::kZstd ? kZstdFieldTag : kDeflateFieldTag, field);
  f = EncodeVarInt(out_used_, f);
  const size_t field_size = static_cast<size_t>(f - field);
  uint8_t record[1 + kMaxVarIntSize];
  record[0] = kTracePacketTag;
  const size_t record_size =
      static_cast<size_t>(EncodeVarInt(field_size + out_used_, record + 1) - record);
  char* start = out_.get() + kHeaderRoom - field_size - record_size;
  memcpy(start, record, record_size);
  memcpy(start + record_size, field, field_size);
  packets_ = 0;
  input_bytes_ = 0;
  return std::string_view(start, record_size + field_size + out_used_);
}

void PacketCompressor::Discard() {
  packets_ = 0;
  input_bytes_ = 0;
  out_used_ = 0;
}

}  // namespace sluice
