// FtracePageParser: walks one raw ring-buffer page (sub-buffer) as read from
// per_cpu/cpuN/trace_pipe_raw and yields its event records with their
// absolute timestamps. Static functions over bytes, driven by the
// FtraceHeaderFormat read from events/header_page and events/header_event.
//
// Page layout (offsets from header_page; 64-bit kernel shown):
//
//   0        8                16                       16+size      page end
//   ┌────────┬────────────────┬────────────────────────┬────────┬───────────┐
//   │ u64 ts │ commit (long)  │ events ...             │ missed │ zeros     │
//   │        │ size | flags   │                        │ count? │           │
//   └────────┴────────────────┴────────────────────────┴────────┴───────────┘
//   commit: bits 0..29 = bytes of event data; bit 31 RB_MISSED_EVENTS (events
//   were lost before this page); bit 30 RB_MISSED_STORED (the number lost is
//   stored as a `long` right after the data). commit is 4 bytes on 32-bit
//   kernels (e.g. 3.4 ARM), 8 on 64-bit; the flags are bits 31/30 either way,
//   and on 64-bit kernels bits 32..63 are set too (the kernel adds the int
//   (1 << 31), which sign-extends): they are ignored.
//
// Event header (one u32, then type-dependent words):
//
//   bits 0..4 type_len   bits 5..31 time_delta (ns since previous event)
//   type_len  1..28 : data record of type_len*4 bytes follows
//   type_len  0     : array[0] = length (counting array[0] itself),
//                     data follows array[0]; record = 4 + array[0] bytes
//   type_len 29     : padding. time_delta == 0: the rest of the page is
//                     padding (no length). time_delta != 0: a discarded event
//                     of 4 + array[0] bytes; its time_delta still counts
//                     (the kernel sets it to 1 when it was 0: that 1 does not)
//   type_len 30     : time extend: delta = array[0] << 27 | time_delta, 8 bytes
//   type_len 31     : absolute time stamp (4.17+; on 6.x also mid-page):
//                     ts = array[0] << 27 | time_delta, 59 bits. The top 5
//                     bits come from the running timestamp as the kernel's
//                     rb_fix_abs_ts() does, with a carry if it wrapped.
//
// Trust: everything in the page is untrusted. Every length is checked against
// the page end before use; a malformed page stops at the bad event with a
// FtraceParseStatus (records before it were well formed and were delivered).
//
// Hot path: allocation-free, no virtual calls; ForEachRecord is a template so
// the visitor inlines. Described with diagrams in docs/FTRACE.md.
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_PAGE_PARSER_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_PAGE_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "user/probes/ftrace/ftrace_format.h"

namespace sluice {

// Same numbers as perfetto.protos.FtraceParseStatus (ftrace_stats.proto);
// checked by static_assert in ftrace_page_encoder.cc.
enum class FtraceParseStatus : uint8_t {
  kUnspecified = 0,
  kOk = 1,
  kUnexpectedReadError = 2,
  kPartialPageRead = 3,
  kAbiInvalidPageHeader = 4,
  kAbiShortEventHeader = 5,
  kAbiNullPadding = 6,
  kAbiShortPaddingLength = 7,
  kAbiInvalidPaddingLength = 8,
  kAbiShortTimeExtend = 9,
  kAbiShortTimeStamp = 10,
  kAbiShortDataLength = 11,
  kAbiZeroDataLength = 12,
  kAbiInvalidDataLength = 13,
  kAbiShortEventId = 14,
  kAbiEndOverflow = 15,
  kShortCompactEvent = 16,
  kInvalidEvent = 17,
};
inline constexpr size_t kFtraceParseStatusCount = 18;
const char* FtraceParseStatusName(FtraceParseStatus status);

struct FtracePageHeader {
  uint64_t timestamp = 0;
  // Bytes of event data (commit without the flag bits).
  uint32_t data_size = 0;
  bool missed_events = false;   // RB_MISSED_EVENTS
  bool missed_stored = false;   // RB_MISSED_STORED: missed_count is valid
  uint64_t missed_count = 0;
};

// One data record. `data` points into the page; it starts with common_type.
struct FtraceRecord {
  uint64_t timestamp = 0;
  const uint8_t* data = nullptr;
  uint32_t size = 0;
};

class FtracePageParser {
 public:
  static constexpr uint32_t kTypePadding = 29;
  static constexpr uint32_t kTypeTimeExtend = 30;
  static constexpr uint32_t kTypeTimeStamp = 31;
  static constexpr uint32_t kTypeLenMask = 0x1f;
  static constexpr uint32_t kTimeDeltaShift = 5;
  static constexpr uint32_t kTsShift = 27;
  static constexpr uint64_t kMissedEvents = 1ull << 31;
  static constexpr uint64_t kMissedStored = 1ull << 30;
  static constexpr uint64_t kCommitSizeMask = (1ull << 30) - 1;
  static constexpr uint64_t kTsMsb = 0xf8ull << 56;

  // Parses the page header. `page_size` is how many bytes of `page` are
  // valid. Fails (kAbiInvalidPageHeader) if the header does not fit or
  // commit's data size runs past the page.
  static FtraceParseStatus ParseHeader(const FtraceHeaderFormat& format,
                                       const uint8_t* page, size_t page_size,
                                       FtracePageHeader* out);

  // The kernel's rb_fix_abs_ts(): an absolute time stamp event carries 59
  // bits; the top 5 come from `running`, plus a carry if that wrapped.
  static uint64_t FixAbsoluteTimestamp(uint64_t abs, uint64_t running) {
    if (running & kTsMsb) {
      abs |= running & kTsMsb;
      if (abs < running) abs += 1ull << 59;
    }
    return abs;
  }

  // Calls `visitor(const FtraceRecord&)` for each data record of the page in
  // order; a visitor that returns bool stops the walk by returning false
  // (then the result is kOk). Returns kOk, or the status of the first
  // malformed event header (records before it were delivered).
  // `*end_timestamp` (if not null) receives the running timestamp where
  // parsing stopped.
  template <typename Visitor>
  static FtraceParseStatus ForEachRecord(const FtraceHeaderFormat& format,
                                         const FtracePageHeader& header,
                                         const uint8_t* page, Visitor&& visitor,
                                         uint64_t* end_timestamp = nullptr);

 private:
  static uint32_t Load32(const uint8_t* p) {
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
  }
};

template <typename Visitor>
FtraceParseStatus FtracePageParser::ForEachRecord(const FtraceHeaderFormat& format,
                                                  const FtracePageHeader& header,
                                                  const uint8_t* page, Visitor&& visitor,
                                                  uint64_t* end_timestamp) {
  const uint8_t* ptr = page + format.data_offset;
  const uint8_t* const end = ptr + header.data_size;  // Checked by ParseHeader.
  uint64_t ts = header.timestamp;
  FtraceParseStatus status = FtraceParseStatus::kOk;
  while (ptr < end) {
    size_t left = static_cast<size_t>(end - ptr);
    if (left < 4) {
      status = FtraceParseStatus::kAbiShortEventHeader;
      break;
    }
    const uint32_t word = Load32(ptr);
    const uint32_t type_len = word & kTypeLenMask;
    const uint32_t time_delta = word >> kTimeDeltaShift;
    if (type_len <= format.data_max_type_len) {  // Data record.
      uint32_t size;
      const uint8_t* data;
      if (type_len == 0) {
        if (left < 8) {
          status = FtraceParseStatus::kAbiShortDataLength;
          break;
        }
        uint32_t length = Load32(ptr + 4);  // Counts itself.
        if (length == 0) {
          status = FtraceParseStatus::kAbiZeroDataLength;
          break;
        }
        if (length < 4 || length > left - 4) {
          status = FtraceParseStatus::kAbiInvalidDataLength;
          break;
        }
        size = length - 4;
        data = ptr + 8;
        ptr += 4 + static_cast<size_t>(length);
      } else {
        size = type_len * 4;
        if (size > left - 4) {
          status = FtraceParseStatus::kAbiInvalidDataLength;
          break;
        }
        data = ptr + 4;
        ptr += 4 + static_cast<size_t>(size);
      }
      if (size < 2) {
        status = FtraceParseStatus::kAbiShortEventId;
        break;
      }
      ts += time_delta;
      FtraceRecord record;
      record.timestamp = ts;
      record.data = data;
      record.size = size;
      if constexpr (std::is_same_v<decltype(visitor(record)), bool>) {
        if (!visitor(record)) break;  // The visitor stopped the walk.
      } else {
        visitor(record);
      }
      continue;
    }
    if (type_len == kTypePadding) {
      if (time_delta == 0) break;  // Rest of the page is padding.
      if (left < 8) {
        status = FtraceParseStatus::kAbiShortPaddingLength;
        break;
      }
      uint32_t length = Load32(ptr + 4);
      if (length < 4 || length > left - 4) {
        status = FtraceParseStatus::kAbiInvalidPaddingLength;
        break;
      }
      if (time_delta != 1) ts += time_delta;
      ptr += 4 + static_cast<size_t>(length);
      continue;
    }
    if (left < 8) {
      status = type_len == kTypeTimeExtend ? FtraceParseStatus::kAbiShortTimeExtend
                                           : FtraceParseStatus::kAbiShortTimeStamp;
      break;
    }
    uint64_t value = (static_cast<uint64_t>(Load32(ptr + 4)) << kTsShift) | time_delta;
    if (type_len == kTypeTimeExtend)
      ts += value;
    else
      ts = FixAbsoluteTimestamp(value, ts);
    ptr += 8;
  }
  if (end_timestamp) *end_timestamp = ts;
  return status;
}

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_PAGE_PARSER_H_
