#include "user/query/storage/string_pool.h"

namespace sluice {

StringPool::StringPool() { strings_.emplace_back(); }  // id 0: null

StringId StringPool::Intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  std::string_view stored = blocks_.emplace_back(s);
  auto id = static_cast<StringId>(strings_.size());
  strings_.push_back(stored);
  ids_.emplace(stored, id);
  return id;
}

StringId StringPool::Find(std::string_view s) const {
  auto it = ids_.find(s);
  return it == ids_.end() ? kNullStringId : it->second;
}

}  // namespace sluice
