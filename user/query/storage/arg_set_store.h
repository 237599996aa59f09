// ArgSetStore: the key/value sets behind Perfetto's `args` table, one set per
// event (ftrace event fields, print text), deduplicated as Perfetto does: two
// events with identical fields share one arg_set_id.
//
// A sched trace has ~7 args per event and tens of millions of events, so
// rows are not stored one by one (that alone would outgrow Perfetto's own
// memory). Each set is a few bytes in one arena:
//
//   set:  varint count | arg ... (sorted by key text, as Perfetto orders them)
//   arg:  varint key StringId | type byte | value
//         kInt: zigzag varint   kUint: varint   kString: varint StringId
//         kReal: 8 bytes (IEEE double, little-endian)
//
// and the `args` virtual table decodes rows from it on demand. Row ids
// (args.id) are the running count of args over sets in id order.
#ifndef SLUICE_USER_QUERY_STORAGE_ARG_SET_STORE_H_
#define SLUICE_USER_QUERY_STORAGE_ARG_SET_STORE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "user/query/storage/string_pool.h"

namespace sluice {

enum class ArgType : uint8_t { kInt = 0, kUint = 1, kString = 2, kReal = 3, kBool = 4 };

struct Arg {
  StringId key = kNullStringId;
  ArgType type = ArgType::kInt;
  int64_t int_value = 0;       // kInt, kUint (bit pattern), kString (StringId), kBool (0/1)
  double real_value = 0;       // kReal
};

// Perfetto's value_type text for `type`: "int", "uint", "string", "real".
std::string_view ArgTypeName(ArgType type);

inline constexpr uint32_t kNoArgSet = UINT32_MAX;

class ArgSetStore {
 public:
  explicit ArgSetStore(const StringPool* strings);
  ArgSetStore(const ArgSetStore&) = delete;
  ArgSetStore& operator=(const ArgSetStore&) = delete;

  // Adds the set and returns its id, or the id of an identical set added
  // before. Unless `sorted` (the caller put them in key text order), the
  // args are sorted here. An empty set has no id: kNoArgSet.
  uint32_t Add(std::vector<Arg>* args, bool sorted = false);

  uint32_t set_count() const { return static_cast<uint32_t>(offsets_.size()); }
  uint64_t row_count() const { return rows_; }
  // Args of set `id` in order; `first_row` gets args.id of the first one.
  void Decode(uint32_t id, std::vector<Arg>* out, uint64_t* first_row) const;
  // The set holding args row `row` (binary search over first rows).
  uint32_t SetOfRow(uint64_t row) const;
  uint64_t memory_bytes() const;

 private:
  std::string_view Bytes(uint32_t id) const;

  const StringPool* strings_;
  std::string arena_;
  std::vector<uint64_t> offsets_;    // set id -> start in arena_
  std::vector<uint64_t> first_row_;  // set id -> args.id of its first arg
  uint64_t rows_ = 0;
  std::string scratch_;              // the set being added, encoded
  // Dedup: set ids by a hash of their bytes, in an open-addressing table
  // (linear probing, at most three quarters full). Each slot is (hash << 32) |
  // (id + 1), 0 when empty, so probes and growth compare and move hashes
  // without touching the arena. Hand-written for the import's hot path:
  // most events add a set, and a node-based set allocated a node per set
  // and chased a pointer per probe (a third of the import of arg-heavy
  // traces).
  std::vector<uint64_t> index_;
  size_t index_used_ = 0;
  void GrowIndex();
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_STORAGE_ARG_SET_STORE_H_
