// Protobuf base-128 varints (https://protobuf.dev/programming-guides/encoding/)
// and the record framing of a trace file: a perfetto.protos.Trace is a run of
// `Trace.packet` records, each the tag byte 0x0a (field 1, length-delimited),
// the packet's size as a varint, then the packet's bytes. Allocation-free
// forms for hot paths (EncodeVarInt into a buffer), std::string forms for the
// rest. The 4-byte redundant varints of the SMB ABI are in shm/shm_abi.h and
// shm/proto_writer.h.
#ifndef SLUICE_SHM_BASE_VARINT_H_
#define SLUICE_SHM_BASE_VARINT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sluice {

inline constexpr size_t kMaxVarIntSize = 10;  // 64 bits, 7 a byte.

// Writes `value` at `dst` (room for kMaxVarIntSize bytes); returns the end.
inline uint8_t* EncodeVarInt(uint64_t value, uint8_t* dst) {
  while (value >= 0x80) {
    *dst++ = static_cast<uint8_t>(value | 0x80);
    value >>= 7;
  }
  *dst++ = static_cast<uint8_t>(value);
  return dst;
}

inline size_t VarIntSize(uint64_t value) {
  size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    n++;
  }
  return n;
}

inline void AppendVarInt(uint64_t value, std::string* out) {
  uint8_t buf[kMaxVarIntSize];
  out->append(reinterpret_cast<const char*>(buf),
              static_cast<size_t>(EncodeVarInt(value, buf) - buf));
}

// Reads a varint from untrusted bytes at [*p, end); on success *p is past it.
// False when it is cut off or longer than kMaxVarIntSize bytes.
inline bool ReadVarInt(const uint8_t** p, const uint8_t* end, uint64_t* value) {
  uint64_t v = 0;
  for (size_t i = 0; i < kMaxVarIntSize && *p < end; i++) {
    uint8_t b = *(*p)++;
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      *value = v;
      return true;
    }
  }
  return false;
}

// The same over a string_view, from bytes[*pos].
inline bool ReadVarInt(std::string_view bytes, size_t* pos, uint64_t* value) {
  if (*pos > bytes.size()) return false;
  const uint8_t* begin = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* p = begin + *pos;
  if (!ReadVarInt(&p, begin + bytes.size(), value)) return false;
  *pos = static_cast<size_t>(p - begin);
  return true;
}

// Trace.packet: field 1, wire type 2 (length-delimited).
inline constexpr uint8_t kTracePacketTag = 0x0a;

// Bytes a Trace.packet record of a `packet_size`-byte packet takes.
inline size_t TracePacketRecordSize(size_t packet_size) {
  return 1 + VarIntSize(packet_size) + packet_size;
}

// Appends `packet` to `out` as one Trace.packet record.
inline void AppendTracePacketRecord(std::string_view packet, std::string* out) {
  out->push_back(static_cast<char>(kTracePacketTag));
  AppendVarInt(packet.size(), out);
  out->append(packet);
}

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_VARINT_H_
