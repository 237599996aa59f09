// CompactArgsMemo: the arg set id of a compact sched event, by the values
// that make up its args. A sched trace repeats the same few (task, state,
// task) combinations millions of times; finding the set here costs a
// fraction of building and hashing it again in ArgSetStore.
//
// Hot path (one lookup per compact event, allocation-free on a hit): a
// direct-mapped cache of the recent keys answers most lookups with one
// multiply-xor hash and one compare; misses go to a hash map, which is
// cleared when it passes kMaxEntries to bound memory.
#ifndef SLUICE_USER_QUERY_IMPORTER_COMPACT_ARGS_MEMO_H_
#define SLUICE_USER_QUERY_IMPORTER_COMPACT_ARGS_MEMO_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "user/query/storage/arg_set_store.h"
#include "user/query/storage/string_pool.h"

namespace sluice {

class CompactArgsMemo {
 public:
  struct Key {
    StringId comm_a = 0, comm_b = 0;
    int32_t pid_a = 0, pid_b = 0, prio_a = 0, prio_b = 0;
    int64_t state = 0;  // prev_state for switches; target_cpu for wakings.
    bool operator==(const Key&) const = default;
  };

  // The arg set stored for `key`, or kNoArgSet.
  uint32_t Find(const Key& key) {
    Slot& slot = slots_[Hash{}(key) & (kSlots - 1)];
    if (slot.arg_set != kNoArgSet && slot.key == key) return slot.arg_set;
    auto it = map_.find(key);
    if (it == map_.end()) return kNoArgSet;
    slot = {key, it->second};
    return it->second;
  }

  void Insert(const Key& key, uint32_t arg_set) {
    if (map_.size() >= kMaxEntries) map_.clear();
    map_[key] = arg_set;
    slots_[Hash{}(key) & (kSlots - 1)] = {key, arg_set};
  }

 private:
  static constexpr size_t kSlots = 4096;  // A power of two.
  static constexpr size_t kMaxEntries = size_t{1} << 20;
  struct Hash {
    // Independent multiplies (no chain through the fields), mixed down.
    size_t operator()(const Key& k) const {
      uint64_t a = (uint64_t{k.comm_a} << 32 | k.comm_b) * 0x9e3779b97f4a7c15ull;
      uint64_t b = (uint64_t{static_cast<uint32_t>(k.pid_a)} << 32 | static_cast<uint32_t>(k.pid_b)) *
                   0xc2b2ae3d27d4eb4full;
      uint64_t c = (uint64_t{static_cast<uint32_t>(k.prio_a)} << 32 | static_cast<uint32_t>(k.prio_b)) *
                   0x165667b19e3779f9ull;
      uint64_t d = static_cast<uint64_t>(k.state) * 0xd6e8feb86659fd93ull;
      uint64_t h = a ^ b ^ c ^ d;
      return static_cast<size_t>(h ^ (h >> 29) ^ (h >> 47));
    }
  };
  struct Slot {
    Key key;
    uint32_t arg_set = kNoArgSet;
  };
  std::array<Slot, kSlots> slots_{};
  std::unordered_map<Key, uint32_t, Hash> map_;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_COMPACT_ARGS_MEMO_H_
