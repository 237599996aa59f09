#include "user/query/importer/atrace_line.h"

#include <cstdlib>
#include <optional>
#include <string>

namespace sluice {
namespace {

// A whole field as a number, read as Perfetto reads it (strtoul/strtoll
// over the whole field: leading blanks and a sign are accepted, an unsigned
// value is truncated to 32 bits).
std::optional<uint32_t> Uint32(std::string_view field) {
  std::string text(field);  // NUL-terminated for strtoul
  char* end = nullptr;
  auto value = static_cast<uint32_t>(strtoul(text.c_str(), &end, 10));
  return !text.empty() && *end == 0 ? std::optional<uint32_t>(value) : std::nullopt;
}
std::optional<int64_t> Int64(std::string_view field) {
  std::string text(field);
  char* end = nullptr;
  auto value = static_cast<int64_t>(strtoll(text.c_str(), &end, 10));
  return !text.empty() && *end == 0 ? std::optional<int64_t>(value) : std::nullopt;
}

// Splits "a|b|c" field by field ('|' or a NUL ends a field); past the end
// every field is empty.
class Fields {
 public:
  explicit Fields(std::string_view text) : text_(text) {}
  std::string_view Next() {
    if (pos_ > text_.size()) return {};
    size_t bar = text_.find_first_of(std::string_view("|\0", 2), pos_);
    if (bar == std::string_view::npos) bar = text_.size();
    std::string_view field = text_.substr(pos_, bar - pos_);
    pos_ = bar + 1;
    return field;
  }
  // Everything after the fields read so far (a B name may hold '|').
  std::string_view Rest() const { return pos_ >= text_.size() ? std::string_view() : text_.substr(pos_); }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

AtraceParse ParseAtraceLine(std::string_view text, AtraceLine* out) {
  *out = {};
  // The kernel appends '\n'; some writers leave a NUL.
  while (!text.empty() && (text.back() == '\n' || text.back() == '\0')) text.remove_suffix(1);
  Fields fields(text);
  std::string_view phase = fields.Next();
  if (phase.empty()) return AtraceParse::kNotAtrace;
  out->phase = phase[0];
  std::optional<uint32_t> tgid = Uint32(fields.Next());
  out->tgid = tgid.value_or(0);
  switch (out->phase) {
    case 'B':
      if (!tgid) return AtraceParse::kNotAtrace;
      out->name = fields.Rest();
      if (out->name.empty()) out->name = "[empty slice name]";  // Perfetto's placeholder
      return AtraceParse::kOk;
    case 'E':
      return AtraceParse::kOk;  // The tgid is optional (older writers omit it).
    case 'S':
    case 'F': {
      out->name = fields.Next();
      std::optional<int64_t> cookie = Int64(fields.Next());
      if (!tgid || out->name.empty() || !cookie) return AtraceParse::kNotAtrace;
      out->value = *cookie;
      return AtraceParse::kOk;
    }
    case 'I':
      out->name = fields.Next();
      return tgid && !out->name.empty() ? AtraceParse::kOk : AtraceParse::kNotAtrace;
    case 'N':
      out->track = fields.Next();
      out->name = fields.Next();
      return tgid && !out->track.empty() && !out->name.empty() ? AtraceParse::kOk : AtraceParse::kNotAtrace;
    case 'C': {
      // A fifth field (Chrome's category group) is ignored.
      out->name = fields.Next();
      std::optional<int64_t> value = Int64(fields.Next());
      if (!tgid || out->name.empty() || !value) return AtraceParse::kNotAtrace;
      out->value = *value;
      return AtraceParse::kOk;
    }
    case 'G': {
      out->track = fields.Next();
      out->name = fields.Next();
      std::optional<int64_t> cookie = Int64(fields.Next());
      if (!tgid || out->track.empty() || out->name.empty() || !cookie) return AtraceParse::kNotAtrace;
      out->value = *cookie;
      return AtraceParse::kOk;
    }
    case 'H': {
      // H|tgid|track|cookie, or with the slice name before the cookie.
      out->track = fields.Next();
      std::string_view third = fields.Next();
      std::string_view fourth = fields.Next();
      std::optional<int64_t> cookie = Int64(fourth.empty() ? third : fourth);
      if (!tgid || out->track.empty() || !cookie) return AtraceParse::kNotAtrace;
      out->value = *cookie;
      return AtraceParse::kOk;
    }
    default:
      return text.starts_with("trace_event_clock_sync:") ? AtraceParse::kIgnored : AtraceParse::kNotAtrace;
  }
}

}  // namespace sluice
