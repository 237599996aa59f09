// AtomicStats<T>: a plain struct of uint64_t counters, kept as relaxed atomics
// so that one thread can count while others read.
//
// The counting thread (the owner) calls Add(&T::field, n) or Store(whole
// struct); any thread calls Load() to get a T. Each field is read and written
// atomically, with memory_order_relaxed: the fields are statistics, read for
// reports, and no other data is published through them, so nothing pairs with
// these operations. A Load() that runs while the owner counts may mix fields
// from before and after one Add (e.g. bytes counted, pages not yet): readers
// must not derive invariants between fields from a live Load().
//
// Why one pattern: the data sources, the arbiter and the ftrace CPU reader
// each kept a struct for their report and a second struct of atomics that
// mirrored it, copied field by field both ways. With AtomicStats, adding a
// counter is adding a field to T.
#ifndef SLUICE_SHM_BASE_ATOMIC_STATS_H_
#define SLUICE_SHM_BASE_ATOMIC_STATS_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace sluice {

// True for a struct of uint64_t fields only (no padding, no other types).
template <typename T>
inline constexpr bool kIsStatsStruct = std::is_trivially_copyable_v<T> &&
                                       std::is_standard_layout_v<T> &&
                                       sizeof(T) % sizeof(uint64_t) == 0 &&
                                       std::has_unique_object_representations_v<T>;

// total.field += add.field for every field of a stats struct.
template <typename T>
void AccumulateStats(T* total, const T& add) {
  static_assert(kIsStatsStruct<T>, "AccumulateStats needs a struct of uint64_t fields");
  constexpr size_t kFields = sizeof(T) / sizeof(uint64_t);
  uint64_t a[kFields], b[kFields];
  std::memcpy(a, total, sizeof(T));
  std::memcpy(b, &add, sizeof(T));
  for (size_t i = 0; i < kFields; i++) a[i] += b[i];
  std::memcpy(total, a, sizeof(T));
}

template <typename T>
class AtomicStats {
  static_assert(kIsStatsStruct<T>, "AtomicStats<T> needs a struct of uint64_t fields");
  static_assert(std::atomic<uint64_t>::is_always_lock_free);
  static constexpr size_t kFields = sizeof(T) / sizeof(uint64_t);

 public:
  using Field = uint64_t T::*;

  void Add(Field field, uint64_t n = 1) {
    words_[Index(field)].fetch_add(n, std::memory_order_relaxed);
  }
  void Set(Field field, uint64_t value) {
    words_[Index(field)].store(value, std::memory_order_relaxed);
  }
  uint64_t Get(Field field) const { return words_[Index(field)].load(std::memory_order_relaxed); }

  void Store(const T& value) {
    uint64_t words[kFields];
    std::memcpy(words, &value, sizeof(T));
    for (size_t i = 0; i < kFields; i++) words_[i].store(words[i], std::memory_order_relaxed);
  }
  T Load() const {
    uint64_t words[kFields];
    for (size_t i = 0; i < kFields; i++) words[i] = words_[i].load(std::memory_order_relaxed);
    T value;
    std::memcpy(&value, words, sizeof(T));
    return value;
  }

 private:
  // The field's index among T's uint64_t words, from its offset in a T.
  static size_t Index(Field field) {
    static const T probe{};
    return static_cast<size_t>(reinterpret_cast<const char*>(&(probe.*field)) -
                               reinterpret_cast<const char*>(&probe)) /
           sizeof(uint64_t);
  }

  std::array<std::atomic<uint64_t>, kFields> words_{};
};

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_ATOMIC_STATS_H_
