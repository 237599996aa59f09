#include "shm/base/string_util.h"

#include <charconv>

namespace sluice {
namespace {

template <typename T>
bool ParseUnsigned(std::string_view s, T* out) {
  s = TrimWhitespace(s);
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

std::string_view TrimWhitespace(std::string_view s) {
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string Join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); i++) {
    if (i) out += separator;
    out += items[i];
  }
  return out;
}

bool ParseU32(std::string_view s, uint32_t* out) { return ParseUnsigned(s, out); }
bool ParseU64(std::string_view s, uint64_t* out) { return ParseUnsigned(s, out); }

std::string CountOf(uint64_t n, std::string_view noun) {
  std::string s = std::to_string(n) + " " + std::string(noun);
  if (n != 1) s += "s";
  return s;
}

}  // namespace sluice
