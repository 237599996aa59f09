// FtraceFormatTable: the kernel's own description of its ftrace ring buffer
// pages and event records, parsed from tracefs.
//
// sluice never hard-codes a page or event layout. At start it reads:
//
//   events/header_page               the sub-buffer ("page") header:
//       field: u64 timestamp;  offset:0;  size:8;  signed:0;
//       field: local_t commit; offset:8;  size:8;  signed:1;   (4 on 32-bit)
//       field: int overwrite;  offset:8;  size:1;  signed:1;
//       field: char data;      offset:16; size:4080; signed:0;
//     data offset + data size is the sub-buffer size (4 KiB unless
//     buffer_subbuf_size_kb was changed, 6.x).
//
//   events/header_event              the event header bit layout:
//       type_len : 5 bits, time_delta : 27 bits, array : 32 bits
//       padding : type == 29, time_extend : type == 30,
//       time_stamp : type == 31 (listed since 4.17), data max type_len == 28
//
//   events/<group>/<name>/format     one event's record:
//       name: sched_switch
//       ID: 68
//       format:
//         field:unsigned short common_type; offset:0; size:2; signed:0;
//         ...
//         field:char prev_comm[16];        offset:8; size:16; signed:0;
//         field:__data_loc char[] name;    offset:8; size:4;  signed:0;
//       print fmt: ...
//
// Field kinds (FtraceFieldKind) are derived from the type text and size:
//   - integers of 1, 2, 4 or 8 bytes (also pointers, bool, enums);
//   - `char x[N]`: a NUL-padded string of at most N bytes;
//   - `char x[]` or `char x` with size 0 (ftrace/print's buf): a string that
//     runs to the end of the record;
//   - `__data_loc T[] x`: a u32 whose low 16 bits are the offset of the data
//     from the start of the record and high 16 bits its length in bytes;
//   - `__rel_loc T[] x` (5.18+): same, but the offset counts from the end of
//     the 4-byte field itself;
//   - other fixed or trailing arrays (`u8 addr[6]`, `unsigned long caller[]`).
//
// Everything in these files is treated as untrusted text: every number is
// range-checked, a malformed event format is reported and skipped.
//
// Ownership: a FtraceFormatTable owns its events; pointers returned by
// FindById()/FindByName() stay valid for the table's lifetime (also across
// moves of the table and later AddEvent() calls). Thread-safety: immutable
// after construction, so shareable between the per-CPU readers.
//
// Byte order: sluice reads the running kernel, so records are in host byte
// order; the parsers assume a little-endian host (static_assert in the .cc).
// See docs/FTRACE.md for the page diagram.
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_FORMAT_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_FORMAT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shm/base/status.h"

namespace sluice {

enum class FtraceFieldKind : uint8_t {
  kInt,             // 1, 2, 4 or 8 byte integer; `is_signed` says how to extend.
  kFixedString,     // char x[N]
  kTrailingString,  // char x[] / char x, size 0: to the end of the record
  kDataLocString,   // __data_loc char[] x
  kRelLocString,    // __rel_loc char[] x
  kDataLocArray,    // __data_loc T[] x, T not char
  kRelLocArray,     // __rel_loc T[] x, T not char
  kFixedArray,      // T x[N], T not char
  kTrailingArray,   // T x[] / T x with size 0, T not char
  kOther,           // anything else (e.g. a 16-byte struct): raw bytes
};

const char* FtraceFieldKindName(FtraceFieldKind kind);

struct FtraceFieldFormat {
  std::string name;  // "prev_comm" (array suffix removed)
  std::string type;  // "char[16]", "__data_loc char[]", "pid_t"
  uint32_t offset = 0;
  uint32_t size = 0;
  bool is_signed = false;
  FtraceFieldKind kind = FtraceFieldKind::kInt;
  // Element size of kFixedArray/kTrailingArray/k*LocArray when the element
  // type is a known integer type (u8..u64, int, long on the kernel's word
  // size...), else 0.
  uint32_t element_size = 0;

  bool IsString() const {
    return kind == FtraceFieldKind::kFixedString ||
           kind == FtraceFieldKind::kTrailingString ||
           kind == FtraceFieldKind::kDataLocString ||
           kind == FtraceFieldKind::kRelLocString;
  }
};

struct FtraceEventFormat {
  std::string group;  // "sched"
  std::string name;   // "sched_switch"
  uint32_t id = 0;    // the value of common_type in its records
  // In file order, common_* fields included.
  std::vector<FtraceFieldFormat> fields;
  // End of the last fixed field: the smallest well-formed record.
  uint32_t min_size = 0;

  const FtraceFieldFormat* FindField(std::string_view field_name) const;
};

// Layout of a ring-buffer page (sub-buffer) and of event headers.
struct FtraceHeaderFormat {
  // From header_page.
  uint32_t timestamp_offset = 0;
  uint32_t timestamp_size = 8;
  uint32_t commit_offset = 8;
  uint32_t commit_size = 8;  // sizeof(long): 4 on 32-bit kernels.
  uint32_t data_offset = 16;
  uint32_t data_size = 4080;
  // From header_event.
  uint32_t type_len_bits = 5;
  uint32_t time_delta_bits = 27;
  uint32_t padding_type = 29;
  uint32_t time_extend_type = 30;
  uint32_t time_stamp_type = 31;
  uint32_t data_max_type_len = 28;
  // header_event lists "time_stamp : type == 31" (kernels that can write
  // absolute time stamps).
  bool has_time_stamp_type = false;
  // common_type, the event id inside each record (offset 0, size 2 on every
  // kernel so far; taken from the event formats).
  uint32_t common_type_offset = 0;
  uint32_t common_type_size = 2;
  // The tree lacked the file: the layout above is assumed (Load()).
  bool header_page_assumed = false;
  bool header_event_assumed = false;

  // Size of one page as read from trace_pipe_raw.
  uint32_t page_size() const { return data_offset + data_size; }
};

class FtraceFormatTable {
 public:
  // Event ids are the 16-bit common_type.
  static constexpr uint32_t kMaxEventId = 0xffff;

  FtraceFormatTable() = default;
  FtraceFormatTable(FtraceFormatTable&&) = default;
  FtraceFormatTable& operator=(FtraceFormatTable&&) = default;

  // Reads events/header_page, events/header_event and
  // events/<group>/<name>/format for each requested event ("group/name").
  // Events whose format cannot be read or parsed are appended to `missing`
  // (may be null), not an error. Errors: the header files are missing or not
  // understood. `events_dir` is tracefs's events/ (or a copy of it).
  // With kAssumeIfMissing, a tree without header_event or header_page (one
  // copied off a device: `sluice ftrace-formats`) gets the layout every
  // kernel has, and the 4 KiB page of the word size the event formats give
  // (header_*_assumed). A live tracefs always has both; the recorder
  // requires them, since its pages may be of another size.
  enum class Headers { kRequired, kAssumeIfMissing };
  static StatusOr<FtraceFormatTable> Load(const std::string& events_dir,
                                          const std::vector<std::string>& events,
                                          std::vector<std::string>* missing,
                                          Headers headers = Headers::kRequired);
  // Same, for every events/<group>/<name>/format under `events_dir`.
  static StatusOr<FtraceFormatTable> LoadAll(const std::string& events_dir,
                                             std::vector<std::string>* missing,
                                             Headers headers = Headers::kRequired);
  // With this header and no events yet.
  static FtraceFormatTable FromHeader(const FtraceHeaderFormat& header);
  // From the text of header_page and header_event (tests, fuzzers).
  static StatusOr<FtraceFormatTable> FromHeaders(std::string_view header_page,
                                                 std::string_view header_event);

  // Parses one format file's text and adds the event. An event with the same
  // id replaces the earlier one.
  Status AddEvent(std::string_view group, std::string_view format_text);

  const FtraceHeaderFormat& header() const { return header_; }
  // O(1): an index by id. Hot path.
  const FtraceEventFormat* FindById(uint32_t id) const {
    if (id >= by_id_.size()) return nullptr;
    int32_t index = by_id_[id];
    return index < 0 ? nullptr : events_[static_cast<size_t>(index)].get();
  }
  const FtraceEventFormat* FindByName(std::string_view group,
                                      std::string_view name) const;
  // Every event, in the order added.
  std::vector<const FtraceEventFormat*> events() const;
  size_t event_count() const { return events_.size(); }

  // --- Static parsers over text (also used by tests and fuzzers). ---
  static StatusOr<FtraceHeaderFormat> ParseHeaders(std::string_view header_page,
                                                   std::string_view header_event);
  static StatusOr<FtraceEventFormat> ParseEventFormat(std::string_view group,
                                                      std::string_view text);
  // One "field:TYPE NAME;\toffset:N;\tsize:N;\tsigned:N;" line.
  static StatusOr<FtraceFieldFormat> ParseFieldLine(std::string_view line);

 private:
  FtraceHeaderFormat header_;
  std::vector<std::unique_ptr<FtraceEventFormat>> events_;
  std::vector<int32_t> by_id_;  // id -> index in events_, -1 if none.
};

// header_event as every kernel since 2.6.30 writes it (4.17+ add a
// time_stamp line).
extern const char kStandardHeaderEvent[];

// A format file larger than this is not one.
inline constexpr size_t kMaxFormatFileBytes = 4u << 20;

// ReadFile (shm/base/file_util.h) of a format file, at most
// kMaxFormatFileBytes, into `out`.
Status ReadTracefsFile(const std::string& path, std::string* out);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_FORMAT_H_
