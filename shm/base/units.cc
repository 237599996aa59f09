#include "shm/base/units.h"

#include <cctype>
#include <string>

namespace sluice {
namespace {

struct Unit {
  std::string_view name;  // Lower case.
  uint64_t scale;         // Base units (bytes, ms) per one of this unit.
};

constexpr Unit kSizeUnits[] = {{"", 1024},         {"b", 1},          {"k", 1024},
                               {"kb", 1024},       {"m", 1 << 20},      {"mb", 1 << 20},
                               {"g", 1ull << 30},  {"gb", 1ull << 30}};
constexpr Unit kDurationUnits[] = {{"", 1000},   {"ms", 1},       {"s", 1000},
                                   {"m", 60000}, {"min", 60000},  {"h", 3600000}};

enum class Scaled { kOk, kSyntax, kUnit, kNotWhole, kTooLarge };

// "<digits>[.<digits>]<unit>" times the unit's scale, divided by `per` (the
// result's unit in base units), exactly: 128-bit integers, no strtod, so
// "1.001s" is 1001 ms and "0.1mb" is not a whole number of KiB.
template <size_t N>
Scaled ParseScaled(std::string_view text, const Unit (&units)[N], uint64_t per, uint64_t max,
                   uint64_t* out) {
  using u128 = unsigned __int128;
  u128 mantissa = 0;
  u128 divisor = 1;
  size_t i = 0;
  auto digit = [&](size_t at) { return at < text.size() && text[at] >= '0' && text[at] <= '9'; };
  if (!digit(0)) return Scaled::kSyntax;
  // At most 15 digits before the point and 12 after: mantissa < 10^27, and
  // times a scale (<= 2^30) still far below 2^128.
  for (size_t start = i; digit(i); i++) {
    if (i - start >= 15) return Scaled::kTooLarge;
    mantissa = mantissa * 10 + static_cast<unsigned>(text[i] - '0');
  }
  if (i < text.size() && text[i] == '.') {
    if (!digit(++i)) return Scaled::kSyntax;
    for (size_t start = i; digit(i); i++) {
      if (i - start >= 12) return Scaled::kNotWhole;
      mantissa = mantissa * 10 + static_cast<unsigned>(text[i] - '0');
      divisor *= 10;
    }
  }
  std::string unit(text.substr(i));
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const Unit& u : units) {
    if (u.name != unit) continue;
    u128 base = mantissa * u.scale;
    if (base % (divisor * per) != 0) return Scaled::kNotWhole;
    u128 value = base / (divisor * per);
    if (value > max) return Scaled::kTooLarge;
    *out = static_cast<uint64_t>(value);
    return Scaled::kOk;
  }
  return Scaled::kUnit;
}

}  // namespace

StatusOr<uint64_t> ParseSizeKb(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  uint64_t kb = 0;
  switch (ParseScaled(text, kSizeUnits, 1024, 1ull << 30, &kb)) {
    case Scaled::kOk:
      if (kb == 0) return Status::Error("size " + quoted + " must be more than 0");
      return kb;
    case Scaled::kSyntax:
      return Status::Error("bad size " + quoted + ": use e.g. 64mb, 512kb (a bare number is KiB)");
    case Scaled::kUnit:
      return Status::Error("bad size unit in " + quoted + ": use b, kb, mb or gb");
    case Scaled::kNotWhole:
      return Status::Error("size " + quoted + " is not a whole number of KiB");
    case Scaled::kTooLarge:
      break;
  }
  return Status::Error("size " + quoted + " is too large (at most 1024gb)");
}

StatusOr<uint32_t> ParseDurationMs(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  uint64_t ms = 0;
  switch (ParseScaled(text, kDurationUnits, 1, 4000000000ull, &ms)) {
    case Scaled::kOk:
      return static_cast<uint32_t>(ms);
    case Scaled::kSyntax:
      return Status::Error("bad duration " + quoted +
                           ": use e.g. 10s, 500ms, 2m (a bare number is seconds)");
    case Scaled::kUnit:
      return Status::Error("bad duration unit in " + quoted + ": use ms, s, m or h");
    case Scaled::kNotWhole:
      return Status::Error("duration " + quoted + " is not a whole number of milliseconds");
    case Scaled::kTooLarge:
      break;
  }
  return Status::Error("duration " + quoted + " is too long (at most 4000000s)");
}

}  // namespace sluice
