// ProtoWireReader: walks the fields of one protobuf message's bytes without
// building messages. Hand-written because it is the importer's hot path:
// every ftrace event of a trace (tens of millions) goes through it, and
// libprotobuf's parse-into-objects costs an allocation per string field.
// Never trusts its input: a malformed field ends the walk with ok() false.
#ifndef SLUICE_USER_QUERY_IMPORTER_PROTO_WIRE_READER_H_
#define SLUICE_USER_QUERY_IMPORTER_PROTO_WIRE_READER_H_

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "shm/base/varint.h"

namespace sluice {

enum class WireType : uint8_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

struct WireField {
  uint32_t number = 0;
  WireType type = WireType::kVarint;
  uint64_t value = 0;      // kVarint, kFixed64, kFixed32
  std::string_view bytes;  // kBytes
};

class ProtoWireReader {
 public:
  explicit ProtoWireReader(std::string_view bytes)
      : p_(reinterpret_cast<const uint8_t*>(bytes.data())), end_(p_ + bytes.size()) {}

  // The next field; false at the end or on malformed input (then ok() is
  // false).
  bool Next(WireField* field) {
    if (p_ == end_) return false;
    uint64_t tag;
    if (!ReadVarint(&tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) return Fail();
    field->number = static_cast<uint32_t>(tag >> 3);
    switch (tag & 7) {
      case 0:
        field->type = WireType::kVarint;
        return ReadVarint(&field->value) || Fail();
      case 1:
        field->type = WireType::kFixed64;
        if (end_ - p_ < 8) return Fail();
        std::memcpy(&field->value, p_, 8);
        p_ += 8;
        return true;
      case 2: {
        field->type = WireType::kBytes;
        uint64_t len;
        if (!ReadVarint(&len) || len > static_cast<uint64_t>(end_ - p_)) return Fail();
        field->bytes = std::string_view(reinterpret_cast<const char*>(p_), len);
        p_ += len;
        return true;
      }
      case 5: {
        field->type = WireType::kFixed32;
        if (end_ - p_ < 4) return Fail();
        uint32_t v;
        std::memcpy(&v, p_, 4);
        field->value = v;
        p_ += 4;
        return true;
      }
      default:
        return Fail();  // Groups (3, 4) and 6, 7: not in any trace proto.
    }
  }
  bool ok() const { return ok_; }

 private:
  bool ReadVarint(uint64_t* out) { return ReadVarInt(&p_, end_, out); }
  bool Fail() {
    ok_ = false;
    p_ = end_;
    return false;
  }

  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

// The values of a packed repeated varint field, one per Next().
class PackedVarints {
 public:
  explicit PackedVarints(std::string_view bytes)
      : p_(reinterpret_cast<const uint8_t*>(bytes.data())), end_(p_ + bytes.size()) {}
  bool Next(uint64_t* out) {
    if (p_ == end_) return false;
    if (ReadVarInt(&p_, end_, out)) return true;
    ok_ = false;
    p_ = end_;
    return false;
  }
  bool ok() const { return ok_; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

// Values of a repeated varint field, packed or not, appended to `out`.
inline bool AppendVarints(const WireField& f, std::vector<uint64_t>* out) {
  if (f.type == WireType::kVarint) {
    out->push_back(f.value);
    return true;
  }
  if (f.type != WireType::kBytes) return false;
  PackedVarints packed(f.bytes);
  uint64_t v;
  while (packed.Next(&v)) out->push_back(v);
  return packed.ok();
}

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_PROTO_WIRE_READER_H_
