#include "user/probes/ftrace/ftrace_page_parser.h"

namespace sluice {

const char* FtraceParseStatusName(FtraceParseStatus status) {
  switch (status) {
    case FtraceParseStatus::kUnspecified: return "unspecified";
    case FtraceParseStatus::kOk: return "ok";
    case FtraceParseStatus::kUnexpectedReadError: return "unexpected_read_error";
    case FtraceParseStatus::kPartialPageRead: return "partial_page_read";
    case FtraceParseStatus::kAbiInvalidPageHeader: return "abi_invalid_page_header";
    case FtraceParseStatus::kAbiShortEventHeader: return "abi_short_event_header";
    case FtraceParseStatus::kAbiNullPadding: return "abi_null_padding";
    case FtraceParseStatus::kAbiShortPaddingLength: return "abi_short_padding_length";
    case FtraceParseStatus::kAbiInvalidPaddingLength: return "abi_invalid_padding_length";
    case FtraceParseStatus::kAbiShortTimeExtend: return "abi_short_time_extend";
    case FtraceParseStatus::kAbiShortTimeStamp: return "abi_short_time_stamp";
    case FtraceParseStatus::kAbiShortDataLength: return "abi_short_data_length";
    case FtraceParseStatus::kAbiZeroDataLength: return "abi_zero_data_length";
    case FtraceParseStatus::kAbiInvalidDataLength: return "abi_invalid_data_length";
    case FtraceParseStatus::kAbiShortEventId: return "abi_short_event_id";
    case FtraceParseStatus::kAbiEndOverflow: return "abi_end_overflow";
    case FtraceParseStatus::kShortCompactEvent: return "short_compact_event";
    case FtraceParseStatus::kInvalidEvent: return "invalid_event";
  }
  return "unknown";
}

// static
FtraceParseStatus FtracePageParser::ParseHeader(const FtraceHeaderFormat& format,
                                                const uint8_t* page, size_t page_size,
                                                FtracePageHeader* out) {
  // The format was validated at load: fields lie before data_offset.
  if (page_size < format.data_offset || format.timestamp_size != 8 ||
      (format.commit_size != 4 && format.commit_size != 8))
    return FtraceParseStatus::kAbiInvalidPageHeader;
  uint64_t ts;
  memcpy(&ts, page + format.timestamp_offset, sizeof(ts));
  uint64_t commit;
  if (format.commit_size == 8) {
    memcpy(&commit, page + format.commit_offset, sizeof(commit));
  } else {
    uint32_t c32;
    memcpy(&c32, page + format.commit_offset, sizeof(c32));
    commit = c32;
  }
  // The flags are added to the `long` as int constants: on 64-bit kernels
  // (1 << 31) sign-extends, so bits 32..63 are set along with bit 31. Only
  // bits 0..29 are the size.
  const uint64_t size = commit & kCommitSizeMask;
  const size_t room = page_size - format.data_offset;
  if (size > room) return FtraceParseStatus::kAbiInvalidPageHeader;
  out->timestamp = ts;
  out->data_size = static_cast<uint32_t>(size);
  out->missed_events = (commit & kMissedEvents) != 0;
  out->missed_stored = false;
  out->missed_count = 0;
  if (commit & kMissedStored) {
    // The count is a `long` right after the data; trust it only if it fits.
    if (room - size >= format.commit_size) {
      const uint8_t* p = page + format.data_offset + size;
      if (format.commit_size == 8) {
        memcpy(&out->missed_count, p, 8);
      } else {
        uint32_t c32;
        memcpy(&c32, p, 4);
        out->missed_count = c32;
      }
      out->missed_stored = true;
    }
  }
  return FtraceParseStatus::kOk;
}

}  // namespace sluice
