#include "user/probes/ftrace/ftrace_format.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstring>
#include "shm/base/string_util.h"
#include "shm/base/file_util.h"

namespace sluice {

static_assert(std::endian::native == std::endian::little,
              "ftrace parsing assumes a little-endian host");

namespace {

// Largest record or page offset we accept from a format file.
constexpr uint32_t kMaxFieldEnd = 1u << 20;

// Size of a known integer element type, 0 if unknown (e.g. long).
uint32_t KnownElementSize(std::string_view t) {
  if (t.starts_with("const ")) t.remove_prefix(6);
  static constexpr struct {
    std::string_view name;
    uint32_t size;
  } kTypes[] = {
      {"char", 1},      {"unsigned char", 1}, {"signed char", 1}, {"u8", 1},
      {"s8", 1},        {"__u8", 1},          {"__s8", 1},        {"uint8_t", 1},
      {"int8_t", 1},    {"bool", 1},          {"u16", 2},         {"s16", 2},
      {"__u16", 2},     {"__s16", 2},         {"short", 2},       {"unsigned short", 2},
      {"uint16_t", 2},  {"int16_t", 2},       {"u32", 4},         {"s32", 4},
      {"__u32", 4},     {"__s32", 4},         {"int", 4},         {"unsigned int", 4},
      {"unsigned", 4},  {"uint32_t", 4},      {"int32_t", 4},     {"pid_t", 4},
      {"u64", 8},       {"s64", 8},           {"__u64", 8},       {"__s64", 8},
      {"uint64_t", 8},  {"int64_t", 8},       {"long long", 8},   {"unsigned long long", 8},
  };
  for (const auto& known : kTypes)
    if (t == known.name) return known.size;
  return 0;
}

bool IsCharType(std::string_view t) {
  if (t.starts_with("const ")) t.remove_prefix(6);
  return t == "char";
}

// Classifies a field from its declaration "TYPE NAME[...]" and size.
Status ClassifyField(std::string_view decl, FtraceFieldFormat* f) {
  decl = TrimWhitespace(decl);
  // Name: the last identifier, possibly followed by "[...]".
  std::string_view array_suffix;
  if (!decl.empty() && decl.back() == ']') {
    size_t open = decl.rfind('[');
    if (open == std::string_view::npos)
      return Status::Error("field '" + std::string(decl) + "': unbalanced [");
    // "__data_loc char[] name" has its brackets in the type, not here, so a
    // trailing ']' always belongs to the name.
    array_suffix = decl.substr(open);
    decl = TrimWhitespace(decl.substr(0, open));
  }
  size_t name_start = decl.size();
  while (name_start > 0) {
    char c = decl[name_start - 1];
    bool ident = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 (c >= '0' && c <= '9') || c == '_';
    if (!ident) break;
    name_start--;
  }
  if (name_start == decl.size())
    return Status::Error("field '" + std::string(decl) + "' has no name");
  f->name = std::string(decl.substr(name_start));
  std::string_view type = TrimWhitespace(decl.substr(0, name_start));
  if (type.empty())
    return Status::Error("field '" + f->name + "' has no type");

  bool data_loc = type.starts_with("__data_loc ");
  bool rel_loc = type.starts_with("__rel_loc ");
  if (data_loc || rel_loc) {
    std::string_view elem = TrimWhitespace(type.substr(data_loc ? 11 : 10));
    if (elem.size() >= 2 && elem.substr(elem.size() - 2) == "[]")
      elem = TrimWhitespace(elem.substr(0, elem.size() - 2));
    f->type = std::string(type);
    if (f->size != 4)
      return Status::Error("field '" + f->name + "': " + std::string(type) +
                            " of size " + std::to_string(f->size) +
                            " (expected 4)");
    bool is_char = IsCharType(elem);
    f->element_size = KnownElementSize(elem);
    if (data_loc)
      f->kind = is_char ? FtraceFieldKind::kDataLocString : FtraceFieldKind::kDataLocArray;
    else
      f->kind = is_char ? FtraceFieldKind::kRelLocString : FtraceFieldKind::kRelLocArray;
    return Status::Ok();
  }

  f->type = std::string(type) + std::string(array_suffix);
  bool is_char = IsCharType(type);
  if (f->size == 0) {
    // Dynamic tail: "char buf[]" (newer) or "char buf" (older kernels).
    f->kind = is_char ? FtraceFieldKind::kTrailingString : FtraceFieldKind::kTrailingArray;
    f->element_size = KnownElementSize(type);
    return Status::Ok();
  }
  if (!array_suffix.empty()) {
    if (is_char) {
      f->kind = FtraceFieldKind::kFixedString;
      f->element_size = 1;
      return Status::Ok();
    }
    f->kind = FtraceFieldKind::kFixedArray;
    uint32_t count = 0;
    std::string_view n = array_suffix.substr(1, array_suffix.size() - 2);
    if (ParseU32(n, &count) && count > 0 && f->size % count == 0)
      f->element_size = f->size / count;
    else
      f->element_size = KnownElementSize(type);
    return Status::Ok();
  }
  if (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8) {
    f->kind = FtraceFieldKind::kInt;
    return Status::Ok();
  }
  f->kind = FtraceFieldKind::kOther;
  return Status::Ok();
}

}  // namespace

const char* FtraceFieldKindName(FtraceFieldKind kind) {
  switch (kind) {
    case FtraceFieldKind::kInt: return "int";
    case FtraceFieldKind::kFixedString: return "char[N]";
    case FtraceFieldKind::kTrailingString: return "char[] (to end)";
    case FtraceFieldKind::kDataLocString: return "data_loc string";
    case FtraceFieldKind::kRelLocString: return "rel_loc string";
    case FtraceFieldKind::kDataLocArray: return "data_loc array";
    case FtraceFieldKind::kRelLocArray: return "rel_loc array";
    case FtraceFieldKind::kFixedArray: return "array";
    case FtraceFieldKind::kTrailingArray: return "array[] (to end)";
    case FtraceFieldKind::kOther: return "bytes";
  }
  return "?";
}

const FtraceFieldFormat* FtraceEventFormat::FindField(std::string_view field_name) const {
  for (const auto& f : fields)
    if (f.name == field_name) return &f;
  return nullptr;
}

// static
StatusOr<FtraceFieldFormat> FtraceFormatTable::ParseFieldLine(std::string_view line) {
  line = TrimWhitespace(line);
  if (!line.starts_with("field:"))
    return Status::Error("not a field line: '" + std::string(line) + "'");
  line.remove_prefix(6);
  FtraceFieldFormat f;
  std::string_view decl;
  bool have_decl = false, have_offset = false, have_size = false;
  while (!line.empty()) {
    size_t semi = line.find(';');
    std::string_view part = TrimWhitespace(line.substr(0, semi));
    line = semi == std::string_view::npos ? std::string_view() : line.substr(semi + 1);
    if (!have_decl) {  // The first part is the declaration, even if empty.
      decl = part;
      have_decl = true;
      continue;
    }
    if (part.empty()) continue;
    size_t colon = part.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = TrimWhitespace(part.substr(0, colon));
    std::string_view value = part.substr(colon + 1);
    uint32_t v = 0;
    if (key == "offset") {
      if (!ParseU32(value, &v)) return Status::Error("bad offset in field line");
      f.offset = v;
      have_offset = true;
    } else if (key == "size") {
      if (!ParseU32(value, &v)) return Status::Error("bad size in field line");
      f.size = v;
      have_size = true;
    } else if (key == "signed") {
      if (!ParseU32(value, &v) || v > 1) return Status::Error("bad signed in field line");
      f.is_signed = v == 1;
    }
  }
  if (!have_decl || !have_offset || !have_size)
    return Status::Error("field line lacks declaration, offset or size");
  if (f.offset > kMaxFieldEnd || f.size > kMaxFieldEnd)
    return Status::Error("field offset or size out of range");
  Status s = ClassifyField(decl, &f);
  if (!s.ok()) return s;
  return f;
}

namespace {

// events/header_page: the page header's fields (timestamp, commit, data).
Status ParseHeaderPage(std::string_view header_page, FtraceHeaderFormat* out) {
  FtraceHeaderFormat& h = *out;
  bool have_ts = false, have_commit = false, have_data = false;
  Status error;
  ForEachLine(header_page, [&](std::string_view line) {
    if (!TrimWhitespace(line).starts_with("field:")) return true;
    auto f = FtraceFormatTable::ParseFieldLine(line);
    if (!f.ok()) {
      error = f.status();
      return false;
    }
    if (f->name == "timestamp") {
      h.timestamp_offset = f->offset;
      h.timestamp_size = f->size;
      have_ts = true;
    } else if (f->name == "commit") {
      h.commit_offset = f->offset;
      h.commit_size = f->size;
      have_commit = true;
    } else if (f->name == "data") {
      h.data_offset = f->offset;
      h.data_size = f->size;
      have_data = true;
    }
    return true;
  });
  if (!error.ok())
    return Status::Error("header_page: " + error.message());
  if (!have_ts || !have_commit || !have_data)
    return Status::Error(
        "header_page lacks the timestamp, commit or data field: not a tracefs "
        "events/header_page file");
  if (h.timestamp_size != 8)
    return Status::Error("header_page: timestamp of size " +
                         std::to_string(h.timestamp_size) + " (expected 8)");
  if (h.commit_size != 4 && h.commit_size != 8)
    return Status::Error("header_page: commit of size " +
                         std::to_string(h.commit_size) + " (expected 4 or 8)");
  if (h.timestamp_offset + 8 > h.data_offset ||
      h.commit_offset + h.commit_size > h.data_offset)
    return Status::Error("header_page: timestamp or commit overlaps the data");
  if (h.data_size < 64 || h.page_size() > (64u << 20))
    return Status::Error("header_page: data size " + std::to_string(h.data_size) +
                         " out of range");
  return Status::Ok();
}

}  // namespace

// What every kernel since 2.6.30 (and before 4.17's time_stamp line)
// writes in header_event.
const char kStandardHeaderEvent[] =
    "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n"
    "\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n"
    "\tdata max type_len  == 28\n";

namespace {

// events/header_event: "\ttype_len    :    5 bits", "\tpadding     : type == 29",
// "\tdata max type_len  == 28".
Status ParseHeaderEvent(std::string_view header_event, FtraceHeaderFormat* out) {
  FtraceHeaderFormat& h = *out;
  bool have_type_len = false, have_time_delta = false;
  ForEachLine(header_event, [&](std::string_view line) {
    line = TrimWhitespace(line);
    if (line.empty() || line[0] == '#') return true;
    size_t eq = line.find("==");
    if (eq != std::string_view::npos) {
      std::string_view key = TrimWhitespace(line.substr(0, eq));
      uint32_t v = 0;
      if (!ParseU32(line.substr(eq + 2), &v)) return true;
      if (key.starts_with("padding")) h.padding_type = v;
      else if (key.starts_with("time_extend")) h.time_extend_type = v;
      else if (key.starts_with("time_stamp")) {
        h.time_stamp_type = v;
        h.has_time_stamp_type = true;
      } else if (key.starts_with("data max type_len")) h.data_max_type_len = v;
      return true;
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return true;
    std::string_view key = TrimWhitespace(line.substr(0, colon));
    std::string_view value = TrimWhitespace(line.substr(colon + 1));
    if (value.size() > 4 && value.substr(value.size() - 4) == "bits")
      value = TrimWhitespace(value.substr(0, value.size() - 4));
    uint32_t v = 0;
    if (!ParseU32(value, &v)) return true;
    if (key == "type_len") {
      h.type_len_bits = v;
      have_type_len = true;
    } else if (key == "time_delta") {
      h.time_delta_bits = v;
      have_time_delta = true;
    }
    return true;
  });
  if (!have_type_len || !have_time_delta)
    return Status::Error(
        "header_event lacks type_len or time_delta: not a tracefs "
        "events/header_event file");
  // Every kernel since 2.6.30 uses this layout; a different one would need
  // a different parser, not a different constant.
  if (h.type_len_bits != 5 || h.time_delta_bits != 27 || h.padding_type != 29 ||
      h.time_extend_type != 30 || h.time_stamp_type != 31 || h.data_max_type_len != 28)
    return Status::Error(
        "header_event describes an event header layout sluice does not know "
        "(expected 5-bit type_len, 27-bit time_delta, types 29/30/31, max 28)");
  return Status::Ok();
}

}  // namespace

// static
StatusOr<FtraceHeaderFormat> FtraceFormatTable::ParseHeaders(std::string_view header_page,
                                                             std::string_view header_event) {
  FtraceHeaderFormat h;
  SLUICE_RETURN_IF_ERROR(ParseHeaderPage(header_page, &h));
  SLUICE_RETURN_IF_ERROR(ParseHeaderEvent(header_event, &h));
  return h;
}

// static
StatusOr<FtraceEventFormat> FtraceFormatTable::ParseEventFormat(std::string_view group,
                                                                std::string_view text) {
  FtraceEventFormat e;
  e.group = std::string(group);
  bool have_id = false;
  bool in_format = false;
  Status error;
  ForEachLine(text, [&](std::string_view raw) {
    std::string_view line = TrimWhitespace(raw);
    if (line.starts_with("name:")) {
      e.name = std::string(TrimWhitespace(line.substr(5)));
    } else if (line.starts_with("ID:")) {
      uint32_t id = 0;
      if (!ParseU32(line.substr(3), &id) || id > kMaxEventId) {
        error = Status::Error("bad ID line '" + std::string(line) + "'");
        return false;
      }
      e.id = id;
      have_id = true;
    } else if (line.starts_with("format:")) {
      in_format = true;
    } else if (line.starts_with("print fmt:")) {
      return false;
    } else if (in_format && line.starts_with("field:")) {
      auto f = ParseFieldLine(line);
      if (!f.ok()) {
        error = f.status();
        return false;
      }
      e.fields.push_back(std::move(*f));
    }
    return true;
  });
  std::string what = std::string(group) + "/" + (e.name.empty() ? "?" : e.name);
  if (!error.ok()) return Status::Error("format of " + what + ": " + error.message());
  if (e.name.empty() || !have_id)
    return Status::Error("format of " + what + " lacks a name or ID line");
  const FtraceFieldFormat* type = e.FindField("common_type");
  if (type == nullptr || type->offset != 0 || type->size != 2)
    return Status::Error("format of " + what +
                         ": common_type is not a u16 at offset 0");
  for (const auto& f : e.fields) {
    if (f.offset + f.size > kMaxFieldEnd)
      return Status::Error("format of " + what + ": field " + f.name +
                           " lies beyond any record");
    e.min_size = std::max(e.min_size, f.offset + f.size);
  }
  return e;
}

// static
FtraceFormatTable FtraceFormatTable::FromHeader(const FtraceHeaderFormat& header) {
  FtraceFormatTable t;
  t.header_ = header;
  return t;
}

// static
StatusOr<FtraceFormatTable> FtraceFormatTable::FromHeaders(std::string_view header_page,
                                                           std::string_view header_event) {
  auto h = ParseHeaders(header_page, header_event);
  if (!h.ok()) return h.status();
  FtraceFormatTable t;
  t.header_ = *h;
  return t;
}

Status FtraceFormatTable::AddEvent(std::string_view group, std::string_view format_text) {
  auto e = ParseEventFormat(group, format_text);
  if (!e.ok()) return e.status();
  uint32_t id = e->id;
  if (id >= by_id_.size()) by_id_.resize(id + 1, -1);
  if (by_id_[id] >= 0) {
    events_[static_cast<size_t>(by_id_[id])] =
        std::make_unique<FtraceEventFormat>(std::move(*e));
    return Status::Ok();
  }
  by_id_[id] = static_cast<int32_t>(events_.size());
  events_.push_back(std::make_unique<FtraceEventFormat>(std::move(*e)));
  return Status::Ok();
}

const FtraceEventFormat* FtraceFormatTable::FindByName(std::string_view group,
                                                       std::string_view name) const {
  for (const auto& e : events_)
    if (e->name == name && (group.empty() || e->group == group)) return e.get();
  return nullptr;
}

std::vector<const FtraceEventFormat*> FtraceFormatTable::events() const {
  std::vector<const FtraceEventFormat*> out;
  out.reserve(events_.size());
  for (const auto& e : events_) out.push_back(e.get());
  return out;
}

Status ReadTracefsFile(const std::string& path, std::string* out) {
  SLUICE_ASSIGN_OR_RETURN(*out, ReadFile(path, kMaxFormatFileBytes));
  return Status::Ok();
}

namespace {

bool Missing(const std::string& path) { return access(path.c_str(), F_OK) != 0 && errno == ENOENT; }

std::vector<std::string> ListDir(const std::string& path, bool dirs_only);

// The kernel's sizeof(long), from the first event format with a field of
// type long or unsigned long (ftrace/function's ip, kmem's call_site...);
// 0 if none says.
uint32_t LongSizeFromFormats(const std::string& events_dir) {
  std::string text;
  for (const std::string& group : ListDir(events_dir, true)) {
    for (const std::string& name : ListDir(events_dir + "/" + group, true)) {
      if (!ReadTracefsFile(events_dir + "/" + group + "/" + name + "/format", &text).ok()) continue;
      auto e = FtraceFormatTable::ParseEventFormat(group, text);
      if (!e.ok()) continue;
      for (const FtraceFieldFormat& f : e->fields) {
        if ((f.type == "long" || f.type == "unsigned long") && (f.size == 4 || f.size == 8)) return f.size;
      }
    }
  }
  return 0;
}

// Trees read off real devices can lack header_page or header_event (a
// kernel writes both, but copies are incomplete). header_event's layout is
// the same on every kernel since 2.6.30, so a missing one is that layout.
// A missing header_page is the page of a 4 KiB-page kernel whose long has
// the size the event formats give it (8: commit at 8, data at 16; 4: data
// at 12); with no long in any format, there is nothing to go by.
StatusOr<FtraceFormatTable> LoadHeaders(const std::string& events_dir, FtraceFormatTable::Headers headers) {
  const std::string page_path = events_dir + "/header_page", event_path = events_dir + "/header_event";
  const bool assume = headers == FtraceFormatTable::Headers::kAssumeIfMissing;
  const bool page_missing = assume && Missing(page_path), event_missing = assume && Missing(event_path);
  std::string page, event;
  if (!page_missing) {
    Status s = ReadTracefsFile(page_path, &page);
    if (!s.ok()) return Status::Error(s.message() + " (is tracefs mounted, and is this its events/ directory?)");
  }
  if (!event_missing) SLUICE_RETURN_IF_ERROR(ReadTracefsFile(event_path, &event));
  if (page_missing && event_missing && ListDir(events_dir, true).empty())
    return Status::Error("no header_page, header_event or event formats in " + events_dir +
                         " (is tracefs mounted, and is this its events/ directory?)");
  FtraceHeaderFormat h;
  if (page_missing) {
    const uint32_t long_size = LongSizeFromFormats(events_dir);
    if (long_size == 0)
      return Status::Error(events_dir + " has no header_page, and no event format has a long to tell a 32-bit "
                           "kernel from a 64-bit one: copy events/header_page from the device too");
    h.commit_size = long_size;
    h.data_offset = h.commit_offset + long_size;
    h.data_size = 4096 - h.data_offset;
    h.header_page_assumed = true;
  } else {
    auto parsed = FtraceFormatTable::ParseHeaders(page, event_missing ? kStandardHeaderEvent : event);
    if (!parsed.ok()) return parsed.status();
    h = *parsed;
  }
  if (event_missing) {
    // Type 31 (absolute time stamp) is only written by kernels that list
    // it; treating it so on an older one changes nothing.
    h.has_time_stamp_type = true;
    h.header_event_assumed = true;
  }
  FtraceFormatTable t = FtraceFormatTable::FromHeader(h);
  return t;
}

std::vector<std::string> ListDir(const std::string& path, bool dirs_only) {
  std::vector<std::string> out;
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return out;
  while (struct dirent* ent = readdir(d)) {
    std::string name = ent->d_name;
    if (name == "." || name == "..") continue;
    if (dirs_only) {
      struct stat st;
      if (stat((path + "/" + name).c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    }
    out.push_back(std::move(name));
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

// static
StatusOr<FtraceFormatTable> FtraceFormatTable::Load(const std::string& events_dir,
                                                    const std::vector<std::string>& events,
                                                    std::vector<std::string>* missing, Headers headers) {
  auto table = LoadHeaders(events_dir, headers);
  if (!table.ok()) return table;
  std::string text;
  for (const std::string& ev : events) {
    size_t slash = ev.find('/');
    if (slash == std::string::npos || ev.find("..") != std::string::npos) {
      if (missing) missing->push_back(ev);
      continue;
    }
    Status s = ReadTracefsFile(events_dir + "/" + ev + "/format", &text);
    if (s.ok()) s = table->AddEvent(std::string_view(ev).substr(0, slash), text);
    if (!s.ok() && missing) missing->push_back(ev);
  }
  return table;
}

// static
StatusOr<FtraceFormatTable> FtraceFormatTable::LoadAll(const std::string& events_dir,
                                                       std::vector<std::string>* missing, Headers headers) {
  auto table = LoadHeaders(events_dir, headers);
  if (!table.ok()) return table;
  std::string text;
  for (const std::string& group : ListDir(events_dir, true)) {
    for (const std::string& name : ListDir(events_dir + "/" + group, true)) {
      Status s = ReadTracefsFile(events_dir + "/" + group + "/" + name + "/format", &text);
      if (s.ok()) s = table->AddEvent(group, text);
      if (!s.ok() && missing) missing->push_back(group + "/" + name);
    }
  }
  return table;
}

}  // namespace sluice
