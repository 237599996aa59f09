#include "service/trusted_packet.h"

#include <cstddef>

#include "shm/base/varint.h"

namespace sluice {
namespace {

void AppendVarIntField(uint32_t field, uint64_t v, std::string* out) {
  AppendVarInt(static_cast<uint64_t>(field) << 3, out);
  AppendVarInt(v, out);
}

bool IsTrustedField(uint64_t field) {
  return field == kTrustedUidField || field == kTrustedPacketSequenceIdField ||
         field == kTrustedPidField || field == kMachineIdField;
}

// Scans one top-level field starting at *p; on success *p is past it.
bool SkipField(const uint8_t** p, const uint8_t* end, uint64_t* field) {
  uint64_t tag;
  if (!ReadVarInt(p, end, &tag)) return false;
  *field = tag >> 3;
  if (*field == 0 || *field > 0x1fffffff) return false;
  uint64_t v;
  switch (tag & 7) {
    case 0:  // varint
      return ReadVarInt(p, end, &v);
    case 1:  // fixed64
      if (end - *p < 8) return false;
      *p += 8;
      return true;
    case 2:  // length-delimited
      if (!ReadVarInt(p, end, &v) || v > static_cast<uint64_t>(end - *p)) return false;
      *p += v;
      return true;
    case 5:  // fixed32
      if (end - *p < 4) return false;
      *p += 4;
      return true;
    default:  // Groups (3, 4) are not used by any sluice or Perfetto packet.
      return false;
  }
}

}  // namespace

bool StampTrustedFields(std::string* packet_untrusted, const TrustedFields& trusted, uint32_t* state_field) {
  const uint8_t* begin = reinterpret_cast<const uint8_t*>(packet_untrusted->data());
  const uint8_t* end = begin + packet_untrusted->size();
  bool forged = false;
  uint32_t state = 0;
  for (const uint8_t* p = begin; p < end;) {
    uint64_t field;
    if (!SkipField(&p, end, &field)) return false;
    forged |= IsTrustedField(field);
    if (field == kProcessTreeField || field == kSystemInfoField || field == kCpuInfoField ||
        field == kFtraceStatsField)
      state = static_cast<uint32_t>(field);
  }
  if (state_field) *state_field = state;
  if (forged) {
    // Rare (only a misbehaving producer): rebuild without the forged fields.
    std::string clean;
    clean.reserve(packet_untrusted->size());
    for (const uint8_t* p = begin; p < end;) {
      const uint8_t* field_begin = p;
      uint64_t field;
      SkipField(&p, end, &field);  // Validated above.
      if (!IsTrustedField(field))
        clean.append(reinterpret_cast<const char*>(field_begin), static_cast<size_t>(p - field_begin));
    }
    packet_untrusted->swap(clean);
  }
  // int32 fields are encoded sign-extended to 64 bits, as protobuf does.
  AppendVarIntField(kTrustedUidField, static_cast<uint64_t>(static_cast<int64_t>(trusted.uid)),
                    packet_untrusted);
  AppendVarIntField(kTrustedPacketSequenceIdField, trusted.sequence_id, packet_untrusted);
  AppendVarIntField(kTrustedPidField, static_cast<uint64_t>(static_cast<int64_t>(trusted.pid)),
                    packet_untrusted);
  if (trusted.previous_packet_dropped)
    AppendVarIntField(kPreviousPacketDroppedField, 1, packet_untrusted);
  if (trusted.machine_id) AppendVarIntField(kMachineIdField, trusted.machine_id, packet_untrusted);
  return true;
}

}  // namespace sluice
