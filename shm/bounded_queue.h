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
//
// Untouched until used. A cell stores its sequence less its own index, so a
// new queue is all zeros, and its cells come from an anonymous mapping that
// the kernel fills with zeros as each page is first touched: construction
// writes nothing. The arbiter's queue is sized for every chunk of the SMB
// (megabytes for a default SMB); writing each cell's sequence up front cost
// a page fault per 4 KiB at every recorder's start, about a quarter of all
// of `sluice record`'s faults. T is copied in and out bytewise, so it must
// be trivially copyable, and all-zero bytes stand for a cell never written.
#ifndef SLUICE_SHM_BOUNDED_QUEUE_H_
#define SLUICE_SHM_BOUNDED_QUEUE_H_

#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

namespace sluice {

template <typename T>
class BoundedQueue {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>,
                "cells live in zero-filled memory and are never constructed");

 public:
  // `capacity` is rounded up to a power of two (at least 2). Throws
  // std::bad_alloc if the cells cannot be mapped.
  explicit BoundedQueue(size_t capacity) {
    size_t cap = 2;
    while (cap < capacity) cap <<= 1;
    mask_ = cap - 1;
    cells_bytes_ = cap * sizeof(Cell);
    void* cells = mmap(nullptr, cells_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (cells == MAP_FAILED) throw std::bad_alloc();
    cells_ = static_cast<Cell*>(cells);  // Zeros: every cell free for lap 0.
  }
  ~BoundedQueue() { munmap(cells_, cells_bytes_); }
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  size_t capacity() const { return mask_ + 1; }

  // False if the queue is full.
  bool TryPush(const T& value) {
    size_t pos = enqueue_pos_.load(std::memory_order_relaxed);
    for (;;) {
      const size_t index = pos & mask_;
      Cell& cell = cells_[index];
      // acquire: pairs with the consumer's release when it emptied this cell.
      size_t seq = LoadSequence(cell, index);
      intptr_t diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
      if (diff == 0) {
        if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          cell.value = value;
          // release: pairs with TryPop's acquire load of sequence.
          StoreSequence(cell, index, pos + 1);
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
      const size_t index = pos & mask_;
      Cell& cell = cells_[index];
      // acquire: pairs with TryPush's release store of sequence.
      size_t seq = LoadSequence(cell, index);
      intptr_t diff = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos + 1);
      if (diff == 0) {
        if (dequeue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          *out = cell.value;
          // release: pairs with TryPush's acquire; hands the cell to the next lap.
          StoreSequence(cell, index, pos + mask_ + 1);
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
    // The sequence less the cell's index (see the top): accessed only
    // through std::atomic_ref.
    alignas(std::atomic_ref<size_t>::required_alignment) size_t sequence_less_index;
    T value;
  };
  // Acquire and release: the orders the callers above describe.
  static size_t LoadSequence(Cell& cell, size_t index) {
    return std::atomic_ref<size_t>(cell.sequence_less_index).load(std::memory_order_acquire) + index;
  }
  static void StoreSequence(Cell& cell, size_t index, size_t sequence) {
    std::atomic_ref<size_t>(cell.sequence_less_index).store(sequence - index, std::memory_order_release);
  }

  Cell* cells_ = nullptr;
  size_t cells_bytes_ = 0;
  size_t mask_ = 0;
  // Separate cache lines: producers and the consumer hammer different ends.
  alignas(64) std::atomic<size_t> enqueue_pos_{0};
  alignas(64) std::atomic<size_t> dequeue_pos_{0};
};

}  // namespace sluice

#endif  // SLUICE_SHM_BOUNDED_QUEUE_H_
