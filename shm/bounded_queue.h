// BoundedQueue: a fixed-capacity lock-free multi-producer multi-consumer FIFO
// (Dmitry Vyukov's bounded queue design: one sequence number per cell).
//
// Used by the SharedMemoryArbiter to queue commit entries from any writer
// thread without a lock. Capacity is fixed at construction (a power of two) and
// nothing allocates afterwards: push and pop are hot-path safe.
//
// Each cell's `sequence` says whose turn it is:
//   sequence == pos        the cell is free for the producer claiming `pos`
//   sequence == pos + 1    the cell holds the value for the consumer at `pos`
// A producer claims a position by CAS on enqueue_pos_, writes the value, then
// publishes it with a release store of sequence (pairs with the consumer's
// acquire load). The consumer does the mirror image and hands the cell back
// for lap pos + capacity with a release store (pairs with the producer's
// acquire load). enqueue_pos_/dequeue_pos_ themselves are relaxed: they only
// arbitrate who owns a cell; the data hand-off is ordered by `sequence`.
#ifndef SLUICE_SHM_BOUNDED_QUEUE_H_
#define SLUICE_SHM_BOUNDED_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace sluice {

template <typename T>
class BoundedQueue {
 public:
  // `capacity` is rounded up to a power of two (at least 2).
  explicit BoundedQueue(size_t capacity) {
    size_t cap = 2;
    while (cap < capacity) cap <<= 1;
    mask_ = cap - 1;
    cells_ = std::make_unique<Cell[]>(cap);
    for (size_t i = 0; i < cap; i++) cells_[i].sequence.store(i, std::memory_order_relaxed);
  }
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  size_t capacity() const { return mask_ + 1; }

  // False if the queue is full.
  bool TryPush(const T& value) {
    size_t pos = enqueue_pos_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      // acquire: pairs with the consumer's release when it emptied this cell.
      size_t seq = cell.sequence.load(std::memory_order_acquire);
      intptr_t diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
      if (diff == 0) {
        if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          cell.value = value;
          // release: pairs with TryPop's acquire load of sequence.
          cell.sequence.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;  // Full: the cell still holds last lap's value.
      } else {
        pos = enqueue_pos_.load(std::memory_order_relaxed);
      }
    }
  }

  // False if the queue is empty.
  bool TryPop(T* out) {
    size_t pos = dequeue_pos_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& cell = cells_[pos & mask_];
      // acquire: pairs with TryPush's release store of sequence.
      size_t seq = cell.sequence.load(std::memory_order_acquire);
      intptr_t diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos + 1);
      if (diff == 0) {
        if (dequeue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          *out = cell.value;
          // release: pairs with TryPush's acquire; hands the cell to the next lap.
          cell.sequence.store(pos + mask_ + 1, std::memory_order_release);
          return true;
        }
      } else if (diff < 0) {
        return false;  // Empty.
      } else {
        pos = dequeue_pos_.load(std::memory_order_relaxed);
      }
    }
  }

  // Approximate number of queued entries (relaxed; a hint for batching).
  size_t ApproxSize() const {
    size_t e = enqueue_pos_.load(std::memory_order_relaxed);
    size_t d = dequeue_pos_.load(std::memory_order_relaxed);
    return e >= d ? e - d : 0;
  }

 private:
  struct Cell {
    std::atomic<size_t> sequence{0};
    T value{};
  };
  std::unique_ptr<Cell[]> cells_;
  size_t mask_ = 0;
  // Separate cache lines: producers and the consumer hammer different ends.
  alignas(64) std::atomic<size_t> enqueue_pos_{0};
  alignas(64) std::atomic<size_t> dequeue_pos_{0};
};

}  // namespace sluice

#endif  // SLUICE_SHM_BOUNDED_QUEUE_H_
