#include "service/ipc/ipc_frame.h"

#include <cstring>

namespace sluice {

void AppendFrame(std::string_view payload, std::string* out) {
  uint32_t n = static_cast<uint32_t>(payload.size());
  char header[kFrameHeaderSize] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                                   static_cast<char>((n >> 16) & 0xff),
                                   static_cast<char>((n >> 24) & 0xff)};
  out->append(header, kFrameHeaderSize);
  out->append(payload.data(), payload.size());
}

void FrameReader::Compact() {
  if (begin_ == 0) return;
  if (begin_ < end_) memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
}

uint8_t* FrameReader::WritableSpace(size_t min_bytes, size_t* available) {
  Compact();
  if (buf_.size() - end_ < min_bytes) buf_.resize(end_ + min_bytes);
  *available = buf_.size() - end_;
  return buf_.data() + end_;
}

void FrameReader::Append(const uint8_t* data, size_t size) {
  size_t available = 0;
  uint8_t* dst = WritableSpace(size, &available);
  if (size) memcpy(dst, data, size);
  CommitWritten(size);
}

FrameReader::Result FrameReader::NextFrame(std::string_view* frame) {
  if (broken_) return Result::kError;
  size_t have = end_ - begin_;
  if (have < kFrameHeaderSize) {
    if (have == 0) begin_ = end_ = 0;
    return Result::kNeedMore;
  }
  const uint8_t* p = buf_.data() + begin_;
  uint32_t length_untrusted = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                              (static_cast<uint32_t>(p[2]) << 16) |
                              (static_cast<uint32_t>(p[3]) << 24);
  if (length_untrusted == 0 || length_untrusted > max_frame_size_) {
    broken_ = true;
    return Result::kError;
  }
  if (have - kFrameHeaderSize < length_untrusted) return Result::kNeedMore;
  *frame = std::string_view(reinterpret_cast<const char*>(p + kFrameHeaderSize), length_untrusted);
  begin_ += kFrameHeaderSize + length_untrusted;
  return Result::kFrame;
}

}  // namespace sluice
