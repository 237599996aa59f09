// Small string helpers for the text files sluice reads (tracefs, /proc, sysfs,
// kernel configs). For prefixes and suffixes use std::string_view's
// starts_with / ends_with (C++20).
#ifndef SLUICE_SHM_BASE_STRING_UTIL_H_
#define SLUICE_SHM_BASE_STRING_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

// `s` without leading and trailing spaces, tabs, CRs and LFs.
std::string_view TrimWhitespace(std::string_view s);

// Calls fn(line) for each '\n'-separated line of `text` (without the '\n'; a
// last line without one counts too). fn returns false to stop early.
template <typename Fn>
void ForEachLine(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!fn(line)) return;
  }
}

// The items joined with `separator` between each two.
std::string Join(const std::vector<std::string>& items, std::string_view separator);

// "1 packet", "0 packets", "38 packets": a count and its noun for messages
// (English plural with an "s").
std::string CountOf(uint64_t n, std::string_view noun);

// For "did you mean" hints: up to `max_results` of `candidates` closest to
// `word` by edit distance (Levenshtein), closest first, ties in candidate
// order; only those within a quarter of the word's length (at least 2
// edits) and at most one edit further than the closest.
std::vector<std::string> NearestMatches(std::string_view word, const std::vector<std::string>& candidates,
                                        size_t max_results);

// Whole decimal numbers, surrounding whitespace allowed; false on anything
// else (sign, junk, overflow).
bool ParseU32(std::string_view s, uint32_t* out);
bool ParseU64(std::string_view s, uint64_t* out);

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_STRING_UTIL_H_
