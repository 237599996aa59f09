#include "shm/proto_writer.h"

#include <algorithm>

namespace sluice {

void ProtoWriter::Reset(ByteRange range, ProtoWriterSink* sink) {
  cur_ = range.begin;
  end_ = range.end;
  range_begin_ = range.begin;
  written_before_range_ = 0;
  sink_ = sink;
  depth_ = 0;
  misused_ = false;
}

void ProtoWriter::NextRange() {
  written_before_range_ += static_cast<uint64_t>(cur_ - range_begin_);
  ByteRange next = sink_->GetNewRange(this, cur_);
  cur_ = next.begin;
  end_ = next.end;
  range_begin_ = next.begin;
}

void ProtoWriter::EnsureContiguous(size_t size) {
  if (static_cast<size_t>(end_ - cur_) < size) NextRange();
}

void ProtoWriter::WriteRawSlow(const uint8_t* data, size_t size) {
  while (size > 0) {
    if (cur_ == end_) NextRange();
    size_t n = std::min(size, static_cast<size_t>(end_ - cur_));
    memcpy(cur_, data, n);
    cur_ += n;
    data += n;
    size -= n;
  }
}

void ProtoWriter::WriteVarIntSlow(uint32_t field_id, uint64_t value) {
  uint8_t tmp[kMaxTagBytes + kMaxVarIntBytes];
  uint8_t* p = EncodeVarInt(MakeTag(field_id, kWireVarInt), tmp);
  p = EncodeVarInt(value, p);
  WriteRawSlow(tmp, static_cast<size_t>(p - tmp));
}

void ProtoWriter::WriteFixed32(uint32_t field_id, uint32_t value) {
  uint8_t tmp[kMaxTagBytes + 4];
  uint8_t* p = EncodeVarInt(MakeTag(field_id, kWireFixed32), tmp);
  memcpy(p, &value, 4);  // Little-endian hosts only (static_assert in .h users).
  WriteRaw(tmp, static_cast<size_t>(p + 4 - tmp));
}

void ProtoWriter::WriteFixed64(uint32_t field_id, uint64_t value) {
  uint8_t tmp[kMaxTagBytes + 8];
  uint8_t* p = EncodeVarInt(MakeTag(field_id, kWireFixed64), tmp);
  memcpy(p, &value, 8);
  WriteRaw(tmp, static_cast<size_t>(p + 8 - tmp));
}

void ProtoWriter::WriteBytes(uint32_t field_id, const void* data, size_t size) {
  uint8_t tmp[kMaxTagBytes + kMaxVarIntBytes];
  uint8_t* p = EncodeVarInt(MakeTag(field_id, kWireLengthDelimited), tmp);
  p = EncodeVarInt(size, p);
  WriteRaw(tmp, static_cast<size_t>(p - tmp));
  WriteRaw(data, size);
}

void ProtoWriter::BeginNested(uint32_t field_id) {
  uint8_t tmp[kMaxTagBytes];
  uint8_t* p = EncodeVarInt(MakeTag(field_id, kWireLengthDelimited), tmp);
  WriteRaw(tmp, static_cast<size_t>(p - tmp));
  // The size field must be contiguous so that it can be filled (or patched) as
  // one 4-byte unit; a range tail shorter than that is left unused.
  EnsureContiguous(kSizeFieldBytes);
  uint8_t* size_field = cur_;
  memset(size_field, 0, kSizeFieldBytes);
  cur_ += kSizeFieldBytes;
  if (depth_ >= kMaxNesting) {
    misused_ = true;
    depth_++;
    return;
  }
  open_[depth_++] = OpenMessage{size_field, bytes_written()};
}

void ProtoWriter::EndNested() {
  if (depth_ == 0) {
    misused_ = true;
    return;
  }
  depth_--;
  if (depth_ >= kMaxNesting) return;  // Was never recorded; already misused.
  const OpenMessage& m = open_[depth_];
  uint64_t size = bytes_written() - m.body_start;
  if (size > kMaxNestedSize) {
    misused_ = true;
    size = 0;
  }
  WriteRedundantVarInt(static_cast<uint32_t>(size), m.size_field);
}

// ---------------------------------------------------------------------------

HeapProtoWriter::HeapProtoWriter(size_t block_size)
    : block_size_(std::max(block_size, ProtoWriter::kMinRangeBytes)) {
  writer_.Reset(NewBlock(), this);
}

ByteRange HeapProtoWriter::NewBlock() {
  blocks_.push_back(Block{std::make_unique<uint8_t[]>(block_size_), 0});
  uint8_t* begin = blocks_.back().data.get();
  return ByteRange{begin, begin + block_size_};
}

ByteRange HeapProtoWriter::GetNewRange(ProtoWriter*, uint8_t* used_end) {
  Block& last = blocks_.back();
  last.used = static_cast<size_t>(used_end - last.data.get());
  return NewBlock();
}

std::string HeapProtoWriter::Contents() const {
  std::string out;
  out.reserve(writer_.bytes_written());
  for (size_t i = 0; i < blocks_.size(); i++) {
    const Block& b = blocks_[i];
    size_t used = i + 1 == blocks_.size()
                      ? static_cast<size_t>(writer_.cursor() - b.data.get())
                      : b.used;
    out.append(reinterpret_cast<const char*>(b.data.get()), used);
  }
  return out;
}

std::string HeapProtoWriter::Release() {
  std::string out = Contents();
  blocks_.clear();
  writer_.Reset(NewBlock(), this);
  return out;
}

}  // namespace sluice
