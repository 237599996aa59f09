// ProtoWriter: the hot-path protobuf encoder.
//
// Events are encoded straight into shared-memory chunks, never into message
// objects. ProtoWriter appends protobuf wire format into a sequence of byte
// ranges handed out by a ProtoWriterSink (for the SMB: one range per chunk).
// It never allocates and never moves bytes it has written.
//
// Nested messages. Protobuf puts a nested message's length before its body, and
// the body's length is unknown until it ends. BeginNested() reserves the length
// as a 4-byte *redundant varint* (each of the first three bytes has the
// continuation bit set, so the value 5 is 0x85 0x80 0x80 0x00, which every
// protobuf parser accepts) and EndNested() fills it in. Lengths are therefore
// limited to 2^28 - 1 bytes.
//
//   BeginNested(7)          ... body ...            EndNested()
//   ┌─────┬────────────────┬─────────────────────┐
//   │ tag │ size (4 bytes) │ body (any length,   │  size = bytes written
//   │ 3A  │ reserved       │ may cross ranges)   │  since the size field
//   └─────┴────────────────┴─────────────────────┘
//
// Crossing ranges. When a range is full, the writer asks the sink for the next
// one, passing the point up to which the old range was used (the unused tail
// of a range is not part of the stream). If the size field of a still-open
// message lies in a range that the sink has handed back for good (for the SMB:
// a chunk marked Complete), the sink relocates that size field with
// RelocateSizeFields(): it points it at a patch slot, and the four bytes travel
// to the service as a patch when the message ends.
//
// Thread-safety: none. A ProtoWriter belongs to one thread at a time (the one
// owning its TraceWriter).
#ifndef SLUICE_SHM_PROTO_WRITER_H_
#define SLUICE_SHM_PROTO_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <memory>
#include <vector>

#include "shm/base/varint.h"

namespace sluice {

struct ByteRange {
  uint8_t* begin = nullptr;
  uint8_t* end = nullptr;
  size_t size() const { return static_cast<size_t>(end - begin); }
};

class ProtoWriter;

// Hands out the ranges a ProtoWriter writes into.
class ProtoWriterSink {
 public:
  virtual ~ProtoWriterSink() = default;
  // Called when `writer` needs more room. The current range was filled up to
  // `used_end`. Must return a non-empty range of at least
  // ProtoWriter::kMinRangeBytes; a sink that is out of space returns scratch
  // memory and accounts for the bytes written there as lost.
  virtual ByteRange GetNewRange(ProtoWriter* writer, uint8_t* used_end) = 0;
};

class ProtoWriter {
 public:
  // Deepest nesting supported; sluice's deepest message is 5 levels.
  static constexpr int kMaxNesting = 16;
  // A size field is 4 bytes and must be contiguous: a sink never hands out a
  // smaller range.
  static constexpr size_t kSizeFieldBytes = 4;
  static constexpr size_t kMinRangeBytes = 8;
  // Largest length a 4-byte redundant varint holds.
  static constexpr uint32_t kMaxNestedSize = (1u << 28) - 1;

  ProtoWriter() = default;
  ProtoWriter(const ProtoWriter&) = delete;
  ProtoWriter& operator=(const ProtoWriter&) = delete;

  // Starts a new stream in `range`; `sink` supplies further ranges.
  void Reset(ByteRange range, ProtoWriterSink* sink);

  // --- Fields. Each writes the tag and the value. ---
  // uint32/uint64/bool/enum, and int32/int64 (negative values take 10 bytes).
  void WriteVarInt(uint32_t field_id, uint64_t value) {
    if (static_cast<size_t>(end_ - cur_) >= kMaxTagBytes + kMaxVarIntBytes) {
      cur_ = EncodeVarInt(MakeTag(field_id, kWireVarInt), cur_);
      cur_ = EncodeVarInt(value, cur_);
      return;
    }
    WriteVarIntSlow(field_id, value);
  }
  void WriteInt(uint32_t field_id, int64_t value) {
    WriteVarInt(field_id, static_cast<uint64_t>(value));
  }
  // sint32/sint64 (zigzag).
  void WriteSInt(uint32_t field_id, int64_t value) {
    WriteVarInt(field_id, (static_cast<uint64_t>(value) << 1) ^
                              static_cast<uint64_t>(value >> 63));
  }
  void WriteFixed32(uint32_t field_id, uint32_t value);
  void WriteFixed64(uint32_t field_id, uint64_t value);
  void WriteBytes(uint32_t field_id, const void* data, size_t size);
  void WriteString(uint32_t field_id, std::string_view s) {
    WriteBytes(field_id, s.data(), s.size());
  }

  // --- Nested messages and packed repeated fields. ---
  void BeginNested(uint32_t field_id);
  void EndNested();
  // A bare varint, for the body of a packed repeated field
  // (BeginNested(f); WriteRawVarInt(x)...; EndNested()).
  void WriteRawVarInt(uint64_t value) {
    if (static_cast<size_t>(end_ - cur_) >= kMaxVarIntBytes) {
      cur_ = EncodeVarInt(value, cur_);
      return;
    }
    uint8_t tmp[kMaxVarIntBytes];
    WriteRaw(tmp, static_cast<size_t>(EncodeVarInt(value, tmp) - tmp));
  }
  // Pre-encoded bytes (already wire format).
  void WriteRaw(const void* data, size_t size) {
    if (static_cast<size_t>(end_ - cur_) >= size) {
      memcpy(cur_, data, size);
      cur_ += size;
      return;
    }
    WriteRawSlow(static_cast<const uint8_t*>(data), size);
  }

  // --- State. ---
  // Bytes of stream written since Reset().
  uint64_t bytes_written() const {
    return written_before_range_ + static_cast<uint64_t>(cur_ - range_begin_);
  }
  int nesting_depth() const { return depth_; }
  // True if the stream is malformed because of misuse (nesting deeper than
  // kMaxNesting, EndNested() without BeginNested(), a message over
  // kMaxNestedSize). The owner must drop the packet.
  bool misused() const { return misused_; }
  uint8_t* cursor() const { return cur_; }
  uint8_t* range_end() const { return end_; }

  // For sinks: every open message whose size field lies in [begin, end) gets
  // `relocate(old_pointer)` as its new size field (a 4-byte patch slot that
  // stays valid until the message ends).
  template <typename Relocate>
  void RelocateSizeFields(const uint8_t* begin, const uint8_t* end,
                          Relocate&& relocate) {
    for (int i = 0; i < depth_ && i < kMaxNesting; i++) {
      uint8_t* field = open_[i].size_field;
      if (field >= begin && field < end) open_[i].size_field = relocate(field);
    }
  }

  // Encodes `value` as a 4-byte redundant varint at `dst`.
  static void WriteRedundantVarInt(uint32_t value, uint8_t* dst) {
    dst[0] = static_cast<uint8_t>((value & 0x7f) | 0x80);
    dst[1] = static_cast<uint8_t>(((value >> 7) & 0x7f) | 0x80);
    dst[2] = static_cast<uint8_t>(((value >> 14) & 0x7f) | 0x80);
    dst[3] = static_cast<uint8_t>((value >> 21) & 0x7f);
  }
  static uint8_t* EncodeVarInt(uint64_t value, uint8_t* dst) { return sluice::EncodeVarInt(value, dst); }
  static constexpr uint32_t kWireVarInt = 0;
  static constexpr uint32_t kWireFixed64 = 1;
  static constexpr uint32_t kWireLengthDelimited = 2;
  static constexpr uint32_t kWireFixed32 = 5;
  static constexpr uint64_t MakeTag(uint32_t field_id, uint32_t wire_type) {
    return (static_cast<uint64_t>(field_id) << 3) | wire_type;
  }

 private:
  static constexpr size_t kMaxTagBytes = 5;
  static constexpr size_t kMaxVarIntBytes = 10;

  struct OpenMessage {
    uint8_t* size_field;     // Where the 4-byte length goes (maybe a patch slot).
    uint64_t body_start;     // bytes_written() right after the size field.
  };

  void WriteVarIntSlow(uint32_t field_id, uint64_t value);
  void WriteRawSlow(const uint8_t* data, size_t size);
  // Makes [cur_, cur_ + size) contiguous, moving to a new range if needed.
  void EnsureContiguous(size_t size);
  void NextRange();

  uint8_t* cur_ = nullptr;
  uint8_t* end_ = nullptr;
  uint8_t* range_begin_ = nullptr;
  uint64_t written_before_range_ = 0;
  ProtoWriterSink* sink_ = nullptr;
  OpenMessage open_[kMaxNesting] = {};
  int depth_ = 0;
  bool misused_ = false;
};

// A ProtoWriter over heap memory, for code off the hot path (the service's own
// packets, tools, tests). Blocks are never moved, so size fields stay valid.
class HeapProtoWriter : public ProtoWriterSink {
 public:
  explicit HeapProtoWriter(size_t block_size = 4096);
  ProtoWriter* writer() { return &writer_; }
  ProtoWriter* operator->() { return &writer_; }
  // The bytes written so far, joined. The writer may go on writing.
  std::string Contents() const;
  // Returns the bytes and starts an empty stream.
  std::string Release();

  ByteRange GetNewRange(ProtoWriter* writer, uint8_t* used_end) override;

 private:
  struct Block {
    std::unique_ptr<uint8_t[]> data;
    size_t used = 0;
  };
  ByteRange NewBlock();

  size_t block_size_;
  std::vector<Block> blocks_;
  ProtoWriter writer_;
};

}  // namespace sluice

#endif  // SLUICE_SHM_PROTO_WRITER_H_
