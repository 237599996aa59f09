// StringPool: every string the query tables hold (thread names, event names,
// arg keys and values, states), stored once and referred to by a 32-bit id.
//
// A sched-heavy trace repeats a few hundred distinct strings millions of
// times (comms, "R", "S", "sched_switch"); interning them is what keeps the
// tables a few bytes per row. Id 0 is the null string (SQL NULL).
#ifndef SLUICE_USER_QUERY_STORAGE_STRING_POOL_H_
#define SLUICE_USER_QUERY_STORAGE_STRING_POOL_H_

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace sluice {

using StringId = uint32_t;
inline constexpr StringId kNullStringId = 0;

class StringPool {
 public:
  StringPool();
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;

  // The id of `s`, adding it on first sight. The empty string is a string
  // (not null) and has an id of its own.
  StringId Intern(std::string_view s);
  // kNullStringId when `s` was never interned.
  StringId Find(std::string_view s) const;
  // The string of `id`; empty for kNullStringId.
  std::string_view Get(StringId id) const { return strings_[id]; }
  bool IsNull(StringId id) const { return id == kNullStringId; }
  size_t size() const { return strings_.size(); }

 private:
  // Views into blocks_, whose elements never move (a deque of strings).
  std::deque<std::string> blocks_;
  std::vector<std::string_view> strings_;
  std::unordered_map<std::string_view, StringId> ids_;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_STORAGE_STRING_POOL_H_
