#include "shm/base/string_util.h"

#include <algorithm>
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

namespace {

// Edits (insert, delete, replace) turning `a` into `b`; one row of the
// table at a time.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> NearestMatches(std::string_view word, const std::vector<std::string>& candidates,
                                        size_t max_results) {
  const size_t limit = std::max<size_t>(2, word.size() / 4);
  std::vector<std::pair<size_t, size_t>> scored;  // (distance, index)
  for (size_t i = 0; i < candidates.size(); ++i) {
    const size_t distance = EditDistance(word, candidates[i]);
    if (distance <= limit) scored.emplace_back(distance, i);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<std::string> nearest;
  for (size_t k = 0; k < scored.size() && nearest.size() < max_results; ++k) {
    if (scored[k].first > scored[0].first + 1) break;  // Much further than the best: noise.
    nearest.push_back(candidates[scored[k].second]);
  }
  return nearest;
}

}  // namespace sluice
