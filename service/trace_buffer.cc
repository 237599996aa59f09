#include "service/trace_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cstring>

#include "shm/shm_abi.h"

// The copy path is instruction-bound for small chunks: its few helpers are
// forced inline (measured: -20% instructions per 292-byte copy).
#define SLUICE_HOT_INLINE __attribute__((always_inline)) inline

namespace sluice {
namespace {

constexpr uint16_t kFirstCont = ChunkHeader::kFirstPacketContinuesFromPrevChunk;
constexpr uint16_t kLastCont = ChunkHeader::kLastPacketContinuesOnNextChunk;
constexpr uint16_t kNeedsPatching = ChunkHeader::kChunkNeedsPatching;
constexpr uint16_t kKnownFlags = kFirstCont | kLastCont | kNeedsPatching;

// Record kinds, in the low bits of RecordHeader::size_and_kind.
constexpr uint32_t kAlign = 16;
constexpr uint32_t kSizeMask = ~(kAlign - 1);
constexpr uint32_t kKindMask = 0x7;
constexpr uint32_t kFenceBit = 0x8;  // Consumed record that holds a gap (see .h).
enum Kind : uint32_t { kEmpty = 0, kLive = 1, kConsumed = 2, kPadding = 3, kTombstone = 4 };

// ChunkMeta::state bits.
constexpr uint8_t kIncomplete = 1 << 0;   // Copied with chunk_complete=false.
constexpr uint8_t kDroppedLast = 1 << 1;  // Its last fragment was ignored at copy.
constexpr uint8_t kDead = 1 << 2;         // Tombstone: dropped for an ABI violation.
constexpr uint8_t kCorrupt = 1 << 3;      // A malformed fragment: the rest is dropped.

constexpr size_t kSeqCacheSize = 16;
size_t SeqCacheSlot(uint32_t key) { return (key * 0x9e3779b1u) >> 28; }
static_assert(kSeqCacheSize == 16, "SeqCacheSlot yields 4 bits");

// Unwrapped ids start here so that ids up to 2^31 older stay positive.
constexpr uint64_t kExtBase = uint64_t{1} << 32;

// The ring knows each record's sequence and full 64-bit unwrapped id, so an
// overwrite finds the chunk's index entry without unwrapping again (a hostile
// writer can move its newest id by ~2^31 twice, which would change the answer).
struct RecordHeader {
  uint32_t size_and_kind;
  uint32_t chunk_id;  // Low half of the unwrapped id: the producer's chunk id.
  uint16_t producer;
  uint16_t writer;
  uint32_t ext_high;  // High half of the unwrapped id.

  uint32_t size() const { return size_and_kind & kSizeMask; }
  uint32_t kind() const { return size_and_kind & kKindMask; }
  uint64_t ext() const { return (uint64_t{ext_high} << 32) | chunk_id; }
};
static_assert(sizeof(RecordHeader) == kAlign, "records are 16-byte aligned");
constexpr uint32_t kHeaderSize = sizeof(RecordHeader);

uint32_t SequenceKey(ProducerId producer, WriterId writer) {
  return (uint32_t{producer} << 16) | writer;
}

uint32_t RecordSizeFor(size_t payload_size) {
  return static_cast<uint32_t>((kHeaderSize + payload_size + kAlign - 1) & kSizeMask);
}

// One fragment of a chunk's payload: its bytes are [begin, begin + len).
struct Fragment {
  uint32_t begin = 0;
  uint32_t len = 0;
  uint32_t end() const { return begin + len; }
};

// The fragment at payload[offset]; false if its size header is malformed
// or the fragment does not end within `size`.
bool FragmentAt(const uint8_t* payload, uint32_t size, uint32_t offset, Fragment* f) {
  if (offset >= size) return false;
  const uint32_t header = ReadPacketSizeUntrusted(payload + offset, size - offset, &f->len);
  if (header == 0) return false;
  f->begin = offset + header;
  return f->len <= size - f->begin;
}

// True if the fragment at payload[offset] is one its writer abandoned
// (kPacketSizeDropPacket in its size header).
bool AbandonedAt(const uint8_t* payload, uint32_t size, uint32_t offset) {
  uint32_t len = 0;
  return offset < size && ReadPacketSizeUntrusted(payload + offset, size - offset, &len) != 0 &&
         len == kPacketSizeDropPacket;
}

// Walks `count` fragments from `offset`; *end gets the offset after them.
bool WalkFragments(const uint8_t* payload, uint32_t size, uint32_t offset, uint32_t count,
                   uint32_t* end) {
  for (uint32_t i = 0; i < count; i++) {
    Fragment f;
    if (!FragmentAt(payload, size, offset, &f)) return false;
    offset = f.end();
  }
  *end = offset;
  return true;
}

}  // namespace

// One unread chunk in a sequence's index.
struct TraceBuffer::ChunkMeta {
  uint64_t ext = 0;           // Chunk id unwrapped to 64 bits.
  uint32_t record_off = 0;    // Offset of its RecordHeader in the ring.
  uint32_t record_size = 0;
  uint32_t payload_size = 0;
  uint32_t read_off = 0;      // Payload offset of the next unread fragment.
  uint16_t num_fragments = 0;  // Fragments that may be read.
  uint16_t fragments_read = 0;
  uint16_t flags = 0;         // ChunkHeader flags (kKnownFlags only).
  uint8_t state = 0;          // k{Incomplete,DroppedLast,Dead,Corrupt}.
};

// A sequence's unread chunks sorted by ext: a power-of-two circular array.
// Append and pop-front are O(1); an insertion in the middle shifts.
class TraceBuffer::ChunkQueue {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  ChunkMeta& operator[](size_t i) { return slots_[(head_ + i) & mask_]; }
  const ChunkMeta& operator[](size_t i) const { return slots_[(head_ + i) & mask_]; }
  ChunkMeta& front() { return slots_[head_]; }
  void pop_front() {
    head_ = (head_ + 1) & mask_;
    size_--;
  }
  size_t LowerBound(uint64_t ext) const {
    size_t lo = 0, hi = size_;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if ((*this)[mid].ext < ext) lo = mid + 1; else hi = mid;
    }
    return lo;
  }
  ChunkMeta* Find(uint64_t ext) {
    if (size_ == 0 || (*this)[size_ - 1].ext < ext) return nullptr;  // Newer than all.
    size_t i = LowerBound(ext);
    return i < size_ && (*this)[i].ext == ext ? &(*this)[i] : nullptr;
  }
  // Makes room for `ext` in order and returns its slot, to be filled in place
  // (valid until the queue changes).
  ChunkMeta* InsertSlot(uint64_t ext) {
    if (size_ == slots_.size()) Grow();
    size_t i = size_;
    if (size_ > 0 && (*this)[size_ - 1].ext > ext) {
      i = LowerBound(ext);
      for (size_t j = size_; j > i; j--) (*this)[j] = (*this)[j - 1];
    }
    size_++;
    return &(*this)[i];
  }
  void EraseAt(size_t i) {
    if (i == 0) return pop_front();
    for (size_t j = i; j + 1 < size_; j++) (*this)[j] = (*this)[j + 1];
    size_--;
  }

 private:
  void Grow() {
    std::vector<ChunkMeta> bigger(slots_.empty() ? 8 : slots_.size() * 2);
    for (size_t i = 0; i < size_; i++) bigger[i] = (*this)[i];
    slots_.swap(bigger);
    head_ = 0;
    mask_ = slots_.size() - 1;
  }

  std::vector<ChunkMeta> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
  size_t mask_ = 0;
};

struct TraceBuffer::SequenceState {
  uint32_t key = 0;             // SequenceKey(producer, writer).
  ProducerId producer = 0;
  WriterId writer = 0;
  uint32_t producer_uid = 0;
  ChunkQueue chunks;            // Unread chunks (and tombstones), by ext.
  bool has_max = false;
  uint64_t max_ext = 0;         // Newest chunk id seen, unwrapped.
  bool has_position = false;
  uint64_t read_pos_ext = 0;    // Last chunk the reader finished (or lost).
  bool fence_in_buffer = false;  // That chunk's record is still in the ring.
  uint32_t fence_off = 0;
  bool prev_clean = false;      // That chunk ended on a whole packet.
  bool loss_pending = true;     // Next packet gets previous_packet_dropped.
  bool gone = false;            // MarkProducerGone: read as final.
  // Newest chunk the ring overwrote while it still waited for patches (0:
  // none). A patch that comes for it later is not a failed patch: the
  // chunk's data is gone with the overwrite, which chunks_overwritten counts.
  uint64_t overwritten_unpatched_ext = 0;
  // MarkChunksLost: chunks up to this one that are missing will not come.
  bool has_lost_through = false;
  uint64_t lost_through_ext = 0;

  uint64_t Unwrap(ChunkId id) const {
    if (!has_max) return kExtBase + id;
    int32_t delta = static_cast<int32_t>(id - static_cast<uint32_t>(max_ext));
    return static_cast<uint64_t>(static_cast<int64_t>(max_ext) + delta);
  }
};

enum class TraceBuffer::Step { kEmitted, kContinue, kStall };
enum class TraceBuffer::Join { kJoined, kWait, kBrokenByWriter, kBrokenByViolation, kBrokenByLoss };

// ---------------------------------------------------------------------------
// Creation.

std::unique_ptr<TraceBuffer> TraceBuffer::Create(size_t size_bytes, FillPolicy policy,
                                                 size_t first_lap_bytes) {
  const size_t size = size_bytes & kSizeMask;
  if (size_bytes < kMinSize || size > kMaxSize) return nullptr;
  const size_t first_lap = std::clamp<size_t>(first_lap_bytes & kSizeMask, kAlign, size);
  void* ring = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (ring == MAP_FAILED) return nullptr;
  // Huge pages where the kernel allows them (a hint only), the first lap
  // included. A ring of 4 KiB pages larger than the TLB reach costs a page
  // walk per page on every lap. At rest, where a commit comes a minute or
  // more after the last, a hypervisor that shadows the guest's page tables
  // (PVM, as on this project's CI machines) faults again on each small page
  // it has dropped meanwhile, and it keeps huge ones: 1 MiB of chunks copied
  // in a minute after the last copy took 2.2-2.5 ms with small pages, 1.2-1.7
  // ms with huge ones (docs/PERFORMANCE.md, "Sluice at rest"). 2749761 left
  // the first lap small after a start waited 16-20 ms for its up-front fault
  // (Prefault); measured again (15 starts each), huge pages fault a 4 MiB lap
  // in faster (median 0.26 ms, 0.80 small) and waited 9.9 ms once, with no
  // compaction stall: a start may pay that once, where small pages pay at
  // every commit at rest.
  if (size >= (2u << 20)) madvise(ring, size, MADV_HUGEPAGE);
  return std::unique_ptr<TraceBuffer>(
      new TraceBuffer(static_cast<uint8_t*>(ring), size, first_lap, policy));
}

std::unique_ptr<TraceBuffer> TraceBuffer::CloneReadOnly() const {
  std::unique_ptr<TraceBuffer> copy = Create(size_, policy_, lap_);
  if (!copy || !CloneInto(copy.get())) return nullptr;
  return copy;
}

void TraceBuffer::Prefault(size_t bytes) {
  const long page = sysconf(_SC_PAGESIZE);
  const size_t page_size = page > 0 ? static_cast<size_t>(page) : 4096;
  bytes = std::min<size_t>((bytes + page_size - 1) / page_size * page_size, size_);
  if (bytes == 0 || madvise(ring_, bytes, MADV_POPULATE_WRITE) == 0) return;
  // Older kernels: touch each page (the ring is all zeros: Empty records).
  for (size_t off = 0; off < bytes; off += page_size) reinterpret_cast<volatile uint8_t*>(ring_)[off] = 0;
}

bool TraceBuffer::CloneInto(TraceBuffer* copy) const {
  if (copy->size_ != size_ || copy->policy_ != policy_ || copy->wptr_ != 0 || copy->wrapped_ ||
      !copy->sequences_.empty())
    return false;
  // Past the cursor on the first lap, and past the lap, the ring is all zeros
  // (Empty), as the fresh mapping is: only the part in use is copied (and
  // faulted in).
  memcpy(copy->ring_, ring_, used_size());
  copy->lap_ = lap_;
  copy->wptr_ = wptr_;
  copy->wrapped_ = wrapped_;
  copy->discard_all_ = discard_all_;
  copy->stats_ = stats_;
  copy->sequences_.reserve(sequences_.size());
  for (const auto& [key, seq] : sequences_)
    copy->sequences_.emplace(key, std::make_unique<SequenceState>(*seq));
  // seq_cache_, read_list_ and read_index_ stay empty: they point into the
  // copy's own sequences once it is used.
  return true;
}

TraceBuffer::TraceBuffer(uint8_t* ring, size_t size, size_t first_lap, FillPolicy policy)
    : ring_(ring), size_(static_cast<uint32_t>(size)), policy_(policy),
      lap_(static_cast<uint32_t>(first_lap)) {
  static_assert(sizeof(seq_cache_) / sizeof(seq_cache_[0]) == kSeqCacheSize);
  stats_.buffer_size = size;
}

TraceBuffer::~TraceBuffer() { munmap(ring_, size_); }

// ---------------------------------------------------------------------------
// Sequences.

SLUICE_HOT_INLINE TraceBuffer::SequenceState* TraceBuffer::FindSequence(ProducerId producer,
                                                                        WriterId writer) {
  const uint32_t key = SequenceKey(producer, writer);
  SequenceState*& slot = seq_cache_[SeqCacheSlot(key)];
  if (slot != nullptr && slot->key == key) [[likely]] return slot;
  return FindSequenceSlow(key);
}

TraceBuffer::SequenceState* TraceBuffer::FindSequenceSlow(uint32_t key) {
  SequenceState*& slot = seq_cache_[SeqCacheSlot(key)];
  auto it = sequences_.find(key);
  if (it == sequences_.end()) return nullptr;
  slot = it->second.get();
  return slot;
}

SLUICE_HOT_INLINE TraceBuffer::SequenceState* TraceBuffer::FindOrCreateSequence(
    ProducerId producer, WriterId writer) {
  if (SequenceState* seq = FindSequence(producer, writer)) [[likely]] return seq;
  return CreateSequence(producer, writer);
}

TraceBuffer::SequenceState* TraceBuffer::CreateSequence(ProducerId producer, WriterId writer) {
  auto seq = std::make_unique<SequenceState>();
  seq->key = SequenceKey(producer, writer);
  seq->producer = producer;
  seq->writer = writer;
  SequenceState* raw = seq.get();
  seq_cache_[SeqCacheSlot(raw->key)] = raw;
  sequences_.emplace(raw->key, std::move(seq));
  return raw;
}

// ---------------------------------------------------------------------------
// Ring records.

namespace {
RecordHeader LoadHeader(const uint8_t* ring, uint32_t offset) {
  RecordHeader h;
  memcpy(&h, ring + offset, sizeof(h));
  return h;
}
void StoreHeader(uint8_t* ring, uint32_t offset, const RecordHeader& h) {
  memcpy(ring + offset, &h, sizeof(h));
}
void SetKind(uint8_t* ring, uint32_t offset, uint32_t kind_bits) {
  uint32_t word;
  memcpy(&word, ring + offset, sizeof(word));
  word = (word & kSizeMask) | kind_bits;
  memcpy(ring + offset, &word, sizeof(word));
}
}  // namespace

void TraceBuffer::WritePadding(uint32_t offset, uint32_t size) {
  StoreHeader(ring_, offset, RecordHeader{size | kPadding, 0, 0, 0, 0});
  stats_.padding_bytes_written += size;
}

// The write cursor moves past a record at [.., next); whatever is left of the
// records it cleared, up to clear_end, becomes padding.
SLUICE_HOT_INLINE void TraceBuffer::FinishRecord(uint32_t next, uint32_t clear_end) {
  wptr_ = next;
  if (clear_end > next) WritePadding(next, clear_end - next);
  if (wptr_ == size_) {
    wptr_ = 0;
    wrapped_ = true;
    stats_.write_wrap_count++;
  }
}

// True if [begin, end) holds an unread chunk or, with `gap_fences`, a fence
// that holds back chunks after a gap (clearing it releases the gap, see the
// .h): what a ring of the full size would not clear yet either.
bool TraceBuffer::HasUnreadRecords(uint32_t begin, uint32_t end, bool gap_fences) const {
  for (uint32_t pos = begin; pos < end;) {
    const RecordHeader h = LoadHeader(ring_, pos);
    if (h.kind() == kEmpty) return false;
    if (h.kind() == kLive) return true;
    if (gap_fences && h.kind() == kConsumed && (h.size_and_kind & kFenceBit)) {
      auto it = sequences_.find(SequenceKey(h.producer, h.writer));
      const SequenceState* seq = it == sequences_.end() ? nullptr : it->second.get();
      if (seq && seq->fence_in_buffer && seq->fence_off == pos && !seq->chunks.empty() &&
          seq->chunks[0].ext != seq->read_pos_ext + 1)
        return true;
    }
    assert(h.size() >= kAlign && h.size() <= lap_ - pos);
    pos += h.size();
  }
  return false;
}

// Takes an overwritten Live or Tombstone record out of its sequence's index.
SLUICE_HOT_INLINE void TraceBuffer::RemoveOverwritten(ProducerId producer, WriterId writer,
                                                      uint64_t ext, bool live, uint32_t offset,
                                                      uint32_t size) {
  SequenceState* seq = FindSequence(producer, writer);
  assert(seq != nullptr);
  if (seq == nullptr) return;
  ChunkQueue& q = seq->chunks;
  const size_t i = !q.empty() && q.front().ext == ext ? 0 : q.LowerBound(ext);
  assert(i < q.size() && q[i].ext == ext && q[i].record_off == offset);
  if (i >= q.size() || q[i].ext != ext) return;
  (void)offset;
  if (live) {
    stats_.chunks_overwritten++;
    stats_.bytes_overwritten += size;
    if ((q[i].flags & kNeedsPatching) && ext > seq->overwritten_unpatched_ext)
      seq->overwritten_unpatched_ext = ext;
  }
  if (i > 0) {
    q.EraseAt(i);
    return;
  }
  // The reader's next chunk is gone: a known loss. Reading resumes after it.
  DropFence(seq);
  seq->has_position = true;
  seq->read_pos_ext = ext;
  seq->prev_clean = false;
  seq->loss_pending = true;
  q.pop_front();
}

// Removes every record that starts in [begin, end) from the index; returns
// where the last of them ends (>= end), or `end` at never-written memory.
SLUICE_HOT_INLINE uint32_t TraceBuffer::ClearRange(uint32_t begin, uint32_t end) {
  uint32_t pos = begin;
  while (pos < end) {
    const RecordHeader h = LoadHeader(ring_, pos);
    if (h.kind() == kEmpty) return end;  // First lap: all zeros from here.
    assert(h.size() >= kAlign && h.size() <= lap_ - pos);
    switch (h.kind()) {
      case kPadding:
        stats_.padding_bytes_cleared += h.size();
        break;
      case kConsumed:
        if (h.size_and_kind & kFenceBit) {
          SequenceState* seq = FindSequence(h.producer, h.writer);
          if (seq && seq->fence_in_buffer && seq->fence_off == pos) seq->fence_in_buffer = false;
        }
        break;
      case kLive:
      case kTombstone:
        RemoveOverwritten(h.producer, h.writer, h.ext(), h.kind() == kLive, pos, h.size());
        break;
    }
    pos += h.size();
  }
  return pos;
}

// Makes room for a record of `record_size` at the write cursor (wrapping if
// needed). False under DISCARD when that would overwrite an unread chunk.
SLUICE_HOT_INLINE bool TraceBuffer::MakeRoom(uint32_t record_size, uint32_t* clear_end) {
  if (lap_ < size_) GrowLapIfFull(record_size);
  if (record_size > lap_ - wptr_) [[unlikely]] {
    if (!WrapCursor(record_size)) return false;
  } else if (policy_ == FillPolicy::kDiscard && HasUnreadRecords(wptr_, wptr_ + record_size)) {
    return false;
  }
  *clear_end = ClearRange(wptr_, wptr_ + record_size);
  return true;
}

// The record does not fit before the end of the lap: pad the tail, go back
// to 0.
bool TraceBuffer::WrapCursor(uint32_t record_size) {
  if (policy_ == FillPolicy::kDiscard &&
      (HasUnreadRecords(wptr_, lap_) || HasUnreadRecords(0, record_size)))
    return false;
  if (wptr_ < lap_) {
    ClearRange(wptr_, lap_);
    WritePadding(wptr_, lap_ - wptr_);
  }
  wptr_ = 0;
  wrapped_ = true;
  stats_.write_wrap_count++;
  return true;
}

// While the lap is shorter than the ring: true if writing a record of
// `record_size` next would clear data the reader still needs (or the record
// is larger than the lap). Only then is the lap too short.
bool TraceBuffer::LapIsFull(uint32_t record_size) const {
  if (record_size <= lap_ - wptr_) return HasUnreadRecords(wptr_, wptr_ + record_size, true);
  // The cursor would wrap: padding the tail clears [wptr_, lap_) and the
  // record goes at 0.
  return record_size > lap_ || HasUnreadRecords(wptr_, lap_, true) ||
         HasUnreadRecords(0, record_size, true);
}

void TraceBuffer::GrowLapIfFull(uint32_t record_size) {
  while (lap_ < size_ && LapIsFull(record_size)) GrowLap();
}

// Doubles the lap (up to the ring), giving the cursor the new room at once:
// the records ahead of it, [wptr_, lap_), the oldest of the lap, move up to
// the end of the longer lap, and the room between becomes one padding record.
// Costs a memmove of at most the old lap and a pass over the index; the lap
// doubles each time, so all growth costs at most two copies of the ring.
void TraceBuffer::GrowLap() {
  const uint32_t longer = lap_ >= size_ / 2 ? size_ : 2 * lap_;
  const uint32_t room = longer - lap_;
  // On the first lap [wptr_, lap_) is never-written zeros, like the new part.
  if (wrapped_) {
    memmove(ring_ + wptr_ + room, ring_ + wptr_, lap_ - wptr_);
    for (auto& [key, seq] : sequences_) {
      ChunkQueue& q = seq->chunks;
      for (size_t i = 0; i < q.size(); i++)
        if (q[i].record_off >= wptr_) q[i].record_off += room;
      if (seq->fence_in_buffer && seq->fence_off >= wptr_) seq->fence_off += room;
    }
    WritePadding(wptr_, room);
  }
  lap_ = longer;
}

// ---------------------------------------------------------------------------
// Writing.

// The O(1) checks of a chunk's header fields. The fragment framing is checked
// fragment by fragment as the chunk is read (FragmentAt), or at once for a
// recommit.
static bool CheckHeader(uint16_t num_fragments, uint16_t flags, bool complete,
                        uint16_t* usable_out, uint16_t* flags_out, uint8_t* state_out) {
  if (num_fragments > kMaxPacketsPerChunk) return false;
  flags &= kKnownFlags;
  uint16_t usable = num_fragments;
  uint8_t state = 0;
  if (!complete) {
    // Its writer may be in the middle of the last fragment: ignore it.
    state |= kIncomplete;
    flags &= static_cast<uint16_t>(~(kLastCont | kNeedsPatching));
    if (usable > 0) {
      usable--;
      state |= kDroppedLast;
    }
  } else if (num_fragments == 0 && flags != 0) {
    return false;  // Continuation or patch flags on a chunk without fragments.
  }
  *usable_out = usable;
  *flags_out = flags;
  *state_out = state;
  return true;
}

void TraceBuffer::CopyChunkUntrusted(ProducerId producer, uint32_t producer_uid,
                                     WriterId writer, ChunkId chunk_id, uint16_t num_fragments,
                                     uint16_t chunk_flags, const uint8_t* payload, size_t size,
                                     bool chunk_complete) {
  if (writer == 0 || writer > kMaxWriterId || (payload == nullptr && size != 0)) {
    stats_.abi_violations++;
    return;
  }
  SequenceState* seq = FindOrCreateSequence(producer, writer);
  seq->producer_uid = producer_uid;
  seq->gone = false;
  const uint64_t ext = seq->Unwrap(chunk_id);
  if (ChunkMeta* existing = seq->chunks.Find(ext)) {
    Recommit(existing, num_fragments, chunk_flags, payload, size, chunk_complete);
    return;
  }
  if (seq->has_position && ext <= seq->read_pos_ext) return DropLate(seq, ext);
  if (discard_all_) {
    stats_.chunks_discarded++;
    return;
  }

  const bool fits = size <= size_ - kHeaderSize;
  const uint32_t record_size = fits ? RecordSizeFor(size) : kAlign;
  uint32_t clear_end = 0;
  if (!MakeRoom(record_size, &clear_end)) {
    discard_all_ = true;
    stats_.chunks_discarded++;
    return;
  }
  const uint32_t off = wptr_;
  // Clearing may have overwritten this sequence's next chunk and moved the
  // reader past `ext`.
  if (seq->has_position && ext <= seq->read_pos_ext) {
    WritePadding(off, record_size);
    FinishRecord(off + record_size, clear_end);
    return DropLate(seq, ext);
  }

  uint16_t usable = 0, flags = 0;
  uint8_t state = 0;
  const bool valid =
      fits && CheckHeader(num_fragments, chunk_flags, chunk_complete, &usable, &flags, &state);
  if (valid) {
    // The one copy. From here on only the copy is looked at.
    uint8_t* dst = ring_ + off + kHeaderSize;
    if (size != 0) {
      // Zero the alignment tail (< 16 bytes) with one store, then copy.
      static constexpr uint8_t kZeros[kAlign] = {};
      memcpy(ring_ + off + record_size - kAlign, kZeros, kAlign);
      memcpy(dst, payload, size);
    }
    stats_.chunks_written++;
    stats_.bytes_written += record_size;
  } else {
    stats_.abi_violations++;
  }
  StoreHeader(ring_, off,
              RecordHeader{record_size | (valid ? kLive : kTombstone), chunk_id, producer, writer,
                           static_cast<uint32_t>(ext >> 32)});
  FinishRecord(off + record_size, clear_end);
  ChunkMeta* meta = seq->chunks.InsertSlot(ext);
  meta->ext = ext;
  meta->record_off = off;
  meta->record_size = record_size;
  meta->payload_size = valid ? static_cast<uint32_t>(size) : 0;
  meta->read_off = 0;
  meta->num_fragments = usable;
  meta->fragments_read = 0;
  meta->flags = flags;
  meta->state = valid ? state : kDead;
  if (!seq->has_max || ext > seq->max_ext) {
    seq->has_max = true;
    seq->max_ext = ext;
  } else {
    stats_.chunks_committed_out_of_order++;
  }
}

void TraceBuffer::DropLate(SequenceState* seq, uint64_t ext) {
  stats_.chunks_discarded++;
  if (ext < seq->max_ext) stats_.chunks_committed_out_of_order++;
}

// A second copy of a chunk id still in the buffer. Only a copy scraped while
// being written is replaced, in place, and only by one that agrees with what
// was read of it already.
void TraceBuffer::Recommit(ChunkMeta* existing, uint16_t num_fragments, uint16_t chunk_flags,
                           const uint8_t* payload, size_t size, bool chunk_complete) {
  if ((existing->state & (kDead | kIncomplete)) != kIncomplete) {
    stats_.chunks_rewritten++;  // The stored copy is final (it may carry patches).
    return;
  }
  const uint32_t capacity = existing->record_size - kHeaderSize;
  if (size > capacity || (payload == nullptr && size != 0)) {
    stats_.abi_violations++;
    return;
  }
  const uint32_t size32 = static_cast<uint32_t>(size);
  if (scratch_.size() <= size32) scratch_.resize(size32 + 1);  // Never empty: data() != null.
  if (size32 != 0) memcpy(scratch_.data(), payload, size32);
  ChunkMeta fresh = *existing;
  uint32_t boundary = 0;
  uint32_t end = 0;
  if (!CheckHeader(num_fragments, chunk_flags, chunk_complete, &fresh.num_fragments,
                   &fresh.flags, &fresh.state) ||
      !WalkFragments(scratch_.data(), size32, 0, fresh.num_fragments, &end) ||
      fresh.num_fragments < existing->fragments_read ||
      !WalkFragments(scratch_.data(), size32, 0, existing->fragments_read, &boundary) ||
      boundary != existing->read_off ||
      memcmp(scratch_.data(), ring_ + existing->record_off + kHeaderSize, boundary) != 0 ||
      (existing->fragments_read > 0 &&
       (fresh.flags & kFirstCont) != (existing->flags & kFirstCont))) {
    stats_.abi_violations++;
    return;
  }
  uint8_t* dst = ring_ + existing->record_off + kHeaderSize;
  if (size32 != 0) memcpy(dst, scratch_.data(), size32);
  memset(dst + size32, 0, capacity - size32);
  fresh.payload_size = size32;
  *existing = fresh;
  stats_.chunks_rewritten++;
}

bool TraceBuffer::TryPatchChunkContents(ProducerId producer, WriterId writer, ChunkId chunk_id,
                                        const ChunkPatch* patches, size_t num_patches,
                                        bool other_patches_pending) {
  SequenceState* seq = FindSequence(producer, writer);
  const uint64_t ext = seq ? seq->Unwrap(chunk_id) : 0;
  ChunkMeta* c = seq ? seq->chunks.Find(ext) : nullptr;
  if (c == nullptr && seq && ext <= seq->overwritten_unpatched_ext) return false;  // See SequenceState.
  if (c == nullptr || (c->state & kDead) || (patches == nullptr && num_patches != 0)) {
    stats_.patches_failed++;
    return false;
  }
  for (size_t i = 0; i < num_patches; i++) {
    if (c->payload_size < sizeof(patches[i].data) ||
        patches[i].offset > c->payload_size - sizeof(patches[i].data)) {
      stats_.patches_failed++;
      return false;
    }
  }
  uint8_t* payload = ring_ + c->record_off + kHeaderSize;
  for (size_t i = 0; i < num_patches; i++)
    memcpy(payload + patches[i].offset, patches[i].data, sizeof(patches[i].data));
  stats_.patches_succeeded += num_patches;
  if (!other_patches_pending) c->flags &= static_cast<uint16_t>(~kNeedsPatching);
  // Patches are meant for nested sizes inside the last fragment. One that
  // breaks the fragment framing is caught by the reader like any other.
  return true;
}

// Drops the unread rest of a chunk whose next fragment is malformed; the loss
// is reported when the chunk is consumed.
void TraceBuffer::TruncateCorrupt(ChunkMeta* c) {
  c->state |= kCorrupt;
  c->num_fragments = c->fragments_read;
  c->flags &= static_cast<uint16_t>(~(kLastCont | kNeedsPatching));
}

// ---------------------------------------------------------------------------
// Reading.

void TraceBuffer::BeginRead(ReadMode mode) {
  final_read_ = mode == ReadMode::kFinal;
  read_list_.clear();
  read_index_ = 0;
  for (auto it = sequences_.begin(); it != sequences_.end();) {
    SequenceState* seq = it->second.get();
    if (seq->chunks.empty() && seq->gone) {
      it = EraseSequence(it);
      continue;
    }
    if (!seq->chunks.empty()) read_list_.push_back(seq);
    ++it;
  }
  std::sort(read_list_.begin(), read_list_.end(), [](SequenceState* a, SequenceState* b) {
    return SequenceKey(a->producer, a->writer) < SequenceKey(b->producer, b->writer);
  });
}

bool TraceBuffer::ReadNextTracePacket(std::string* packet, PacketSequenceProperties* sequence,
                                      bool* previous_packet_on_sequence_dropped, size_t tailroom) {
  packet->clear();
  read_tailroom_ = tailroom;
  *previous_packet_on_sequence_dropped = false;
  for (; read_index_ < read_list_.size(); read_index_++) {
    SequenceState* seq = read_list_[read_index_];
    const bool final_read = final_read_ || seq->gone;
    while (!seq->chunks.empty()) {
      Step step = ReadStep(seq, final_read, packet, previous_packet_on_sequence_dropped);
      if (step == Step::kStall) break;
      if (step == Step::kEmitted) {
        *sequence = {seq->producer, seq->producer_uid, seq->writer};
        return true;
      }
    }
  }
  return false;
}

// One step on the sequence's oldest unread chunk: emit a packet, skip or drop
// something (continue), or wait (stall). On kEmitted, *dropped tells whether
// something was lost before the packet; losses found while consuming its
// chunks belong to the next one, so the flag is taken before that.
TraceBuffer::Step TraceBuffer::ReadStep(SequenceState* seq, bool final_read,
                                        std::string* packet, bool* dropped) {
  ChunkMeta& c = seq->chunks.front();
  if (c.fragments_read == 0) {
    if (!seq->has_position) {
      seq->has_position = true;
      seq->read_pos_ext = c.ext - 1;
    } else if (c.ext != seq->read_pos_ext + 1) {
      // A gap: hold while the chunk before it is in the ring (buffers.md),
      // unless its chunks are known lost.
      const bool known_lost = seq->has_lost_through && c.ext <= seq->lost_through_ext + 1;
      if (seq->fence_in_buffer && !final_read && !known_lost) return Step::kStall;
      ReleaseGap(seq, c.ext);
    }
  }
  if (c.state & kDead) {
    seq->loss_pending = true;
    ConsumeFront(seq);
    return Step::kContinue;
  }
  if (c.fragments_read == c.num_fragments) {
    if ((c.state & kIncomplete) && !final_read) return Step::kStall;
    ConsumeFront(seq);
    return Step::kContinue;
  }
  const uint8_t* payload = ring_ + c.record_off + kHeaderSize;
  Fragment f;
  if (!FragmentAt(payload, c.payload_size, c.read_off, &f)) {
    if (c.fragments_read + 1 == c.num_fragments &&
        AbandonedAt(payload, c.payload_size, c.read_off)) {
      // Its writer gave the packet up (as upstream counts it).
      stats_.trace_writer_packet_loss++;
      seq->loss_pending = true;
    } else {
      // A malformed fragment, as committed or after a patch: the chunk is
      // dropped from here on (as upstream: what was read of it stays read).
      stats_.abi_violations++;
    }
    TruncateCorrupt(&c);
    return Step::kContinue;
  }
  const bool first = c.fragments_read == 0;
  const bool last = c.fragments_read + 1 == c.num_fragments;

  if (first && (c.flags & kFirstCont)) {
    // The rest of a packet whose start was not read. After a chunk that ended
    // on a whole packet, the writer broke the chain.
    if (seq->prev_clean && c.ext == seq->read_pos_ext + 1) stats_.trace_writer_packet_loss++;
    seq->loss_pending = true;
    Advance(seq, &c, f.end());
    return Step::kContinue;
  }
  if (last && (c.flags & kNeedsPatching)) {
    if (!final_read) return Step::kStall;
    // The patches will never come: the packet's nested sizes are wrong.
    seq->loss_pending = true;
    Advance(seq, &c, f.end());  // patches_failed counts the chunk when consumed.
    return Step::kContinue;
  }
  if (last && (c.flags & kLastCont)) {
    switch (TryJoin(seq, packet, dropped)) {
      case Join::kJoined:
        stats_.readaheads_succeeded++;
        return packet->empty() ? Step::kContinue : Step::kEmitted;
      case Join::kWait:
        stats_.readaheads_failed++;
        if (!final_read) return Step::kStall;
        break;
      case Join::kBrokenByWriter:
        stats_.trace_writer_packet_loss++;
        break;
      case Join::kBrokenByViolation:
      case Join::kBrokenByLoss:  // Counted where it was lost.
        break;
    }
    seq->loss_pending = true;  // The started packet cannot be completed.
    Advance(seq, &c, f.end());
    return Step::kContinue;
  }
  packet->reserve(f.len + read_tailroom_);
  packet->assign(reinterpret_cast<const char*>(payload + f.begin), f.len);
  if (f.len != 0) TakeLoss(seq, dropped);
  Advance(seq, &c, f.end());
  return f.len != 0 ? Step::kEmitted : Step::kContinue;
}

// Joins the packet that starts with the front chunk's last fragment with its
// continuations in the following chunk ids. Changes nothing unless kJoined.
TraceBuffer::Join TraceBuffer::TryJoin(SequenceState* seq, std::string* packet,
                                       bool* dropped) {
  ChunkQueue& q = seq->chunks;
  size_t k = 1;  // q[k]: the chunk holding the packet's end.
  for (;; k++) {
    if (k >= q.size() || q[k].ext != q[0].ext + k) {
      // A piece that will not come (a relay dropped it) ends the wait.
      const bool lost = seq->has_lost_through && q[0].ext + k <= seq->lost_through_ext;
      return lost ? Join::kBrokenByLoss : Join::kWait;
    }
    ChunkMeta& n = q[k];
    if (n.state & (kDead | kCorrupt)) return Join::kBrokenByViolation;
    if (n.num_fragments == 0) return (n.state & kIncomplete) ? Join::kWait : Join::kBrokenByWriter;
    if (!(n.flags & kFirstCont)) return Join::kBrokenByWriter;
    Fragment first;
    if (!FragmentAt(ring_ + n.record_off + kHeaderSize, n.payload_size, 0, &first)) {
      stats_.abi_violations++;  // Its first fragment is malformed.
      TruncateCorrupt(&n);
      return Join::kBrokenByViolation;
    }
    if (n.num_fragments > 1) break;                    // Ends the packet; more follow.
    if (n.flags & kNeedsPatching) return Join::kWait;  // Its only fragment is unpatched.
    if (!(n.flags & kLastCont)) break;                 // Ends the packet.
  }
  // Every piece is here: size them, copy them, then consume them.
  size_t total = 0;
  for (size_t j = 0; j <= k; j++) {
    const ChunkMeta& c = q[j];
    Fragment f;
    if (!FragmentAt(ring_ + c.record_off + kHeaderSize, c.payload_size, c.read_off, &f))
      return Join::kBrokenByViolation;  // Unreachable: each was checked above.
    total += f.len;
  }
  packet->clear();
  packet->reserve(total + read_tailroom_);
  if (total != 0) TakeLoss(seq, dropped);
  for (size_t j = 0; j <= k; j++) {
    ChunkMeta* c = &q.front();
    const uint8_t* payload = ring_ + c->record_off + kHeaderSize;
    Fragment f;
    FragmentAt(payload, c->payload_size, c->read_off, &f);
    packet->append(reinterpret_cast<const char*>(payload + f.begin), f.len);
    Advance(seq, c, f.end());  // Consumes every chunk but possibly the last.
  }
  return Join::kJoined;
}

void TraceBuffer::TakeLoss(SequenceState* seq, bool* dropped) {
  *dropped = seq->loss_pending;
  seq->loss_pending = false;
}

// Moves past one fragment of the front chunk; consumes the chunk when that
// was its last one (an incomplete chunk stays until recommitted or final).
void TraceBuffer::Advance(SequenceState* seq, ChunkMeta* c, uint32_t end) {
  c->read_off = end;
  c->fragments_read++;
  if (c->fragments_read == c->num_fragments && !(c->state & kIncomplete)) ConsumeFront(seq);
}

// Removes the front chunk from the index; its record becomes free space and
// the sequence's fence (see .h, Gaps).
void TraceBuffer::ConsumeFront(SequenceState* seq) {
  const ChunkMeta& c = seq->chunks.front();
  if (!(c.state & kDead)) {
    stats_.chunks_read++;
    stats_.bytes_read += c.record_size;
    if (c.flags & kNeedsPatching) stats_.patches_failed++;
  }
  if (c.state & (kDroppedLast | kCorrupt)) seq->loss_pending = true;
  DropFence(seq);
  SetKind(ring_, c.record_off, kConsumed | kFenceBit);
  seq->fence_in_buffer = true;
  seq->fence_off = c.record_off;
  seq->has_position = true;
  seq->read_pos_ext = c.ext;
  seq->prev_clean = !(c.state & (kDead | kCorrupt | kDroppedLast)) && !(c.flags & kLastCont);
  seq->chunks.pop_front();
}

void TraceBuffer::ReleaseGap(SequenceState* seq, uint64_t next_ext) {
  DropFence(seq);
  seq->read_pos_ext = next_ext - 1;
  seq->prev_clean = false;
  seq->loss_pending = true;
}

void TraceBuffer::DropFence(SequenceState* seq) {
  if (!seq->fence_in_buffer) return;
  SetKind(ring_, seq->fence_off, kConsumed);
  seq->fence_in_buffer = false;
}

void TraceBuffer::MarkChunksLost(ProducerId producer, WriterId writer, ChunkId last_lost) {
  SequenceState* seq = FindSequence(producer, writer);
  if (!seq || !seq->has_max) return;
  const uint64_t ext = seq->Unwrap(last_lost);
  if (!seq->has_lost_through || ext > seq->lost_through_ext) {
    seq->has_lost_through = true;
    seq->lost_through_ext = ext;
  }
}

void TraceBuffer::MarkProducerGone(ProducerId producer) {
  for (auto& [key, seq] : sequences_)
    if (seq->producer == producer) seq->gone = true;
}

TraceBuffer::SequenceMap::iterator TraceBuffer::EraseSequence(SequenceMap::iterator it) {
  SequenceState*& slot = seq_cache_[SeqCacheSlot(it->second->key)];
  if (slot == it->second.get()) slot = nullptr;
  return sequences_.erase(it);
}

void TraceBuffer::ForgetEmptyGoneSequences(std::unordered_set<ProducerId>* held) {
  read_list_.clear();  // It may point at what is freed below.
  read_index_ = 0;
  for (auto it = sequences_.begin(); it != sequences_.end();) {
    if (it->second->chunks.empty() && it->second->gone) {
      it = EraseSequence(it);
      continue;
    }
    held->insert(it->second->producer);
    ++it;
  }
}

// ---------------------------------------------------------------------------
// Invariants (tests and fuzzer).

bool TraceBuffer::CheckInvariantsForTesting() const {
  auto find = [this](uint16_t producer, uint16_t writer) -> const SequenceState* {
    auto it = sequences_.find(SequenceKey(producer, writer));
    return it == sequences_.end() ? nullptr : it->second.get();
  };
  // The ring is a chain of records: [0, wptr_) on the first lap, the whole
  // lap after; past the lap it is never-written zeros.
  if (lap_ < kAlign || lap_ > size_ || lap_ % kAlign != 0) return false;
  if (lap_ < size_ && LoadHeader(ring_, lap_).size_and_kind != 0) return false;
  size_t records_in_ring = 0;
  const uint32_t end = used_size();
  uint32_t pos = 0;
  while (pos < end) {
    const RecordHeader h = LoadHeader(ring_, pos);
    if (h.size() < kAlign || h.size() > end - pos || h.kind() == kEmpty || h.kind() > kTombstone)
      return false;
    if (h.kind() == kLive || h.kind() == kTombstone) {
      const SequenceState* seq = find(h.producer, h.writer);
      if (seq == nullptr) return false;
      const uint64_t ext = h.ext();
      const size_t i = seq->chunks.LowerBound(ext);
      if (i >= seq->chunks.size()) return false;
      const ChunkMeta& c = seq->chunks[i];
      if (c.ext != ext || c.record_off != pos || c.record_size != h.size() ||
          ((c.state & kDead) != 0) != (h.kind() == kTombstone))
        return false;
      records_in_ring++;
    }
    pos += h.size();
  }
  if (pos != end || wptr_ > lap_ || wptr_ == size_) return false;
  if (!wrapped_ && wptr_ < size_ && LoadHeader(ring_, wptr_).size_and_kind != 0) return false;
  // The index: sorted, ahead of the reader, consistent read positions.
  size_t records_in_index = 0;
  for (const auto& [key, seq] : sequences_) {
    if (key != SequenceKey(seq->producer, seq->writer)) return false;
    const ChunkQueue& q = seq->chunks;
    for (size_t i = 0; i < q.size(); i++) {
      const ChunkMeta& c = q[i];
      if (i > 0 && q[i - 1].ext >= c.ext) return false;
      if (i > 0 && c.fragments_read != 0) return false;
      if (c.fragments_read > c.num_fragments || c.read_off > c.payload_size) return false;
      if (seq->has_position && c.ext <= seq->read_pos_ext) return false;
      if (c.ext != LoadHeader(ring_, c.record_off).ext()) return false;
    }
    if (seq->fence_in_buffer) {
      const RecordHeader h = LoadHeader(ring_, seq->fence_off);
      if ((h.size_and_kind & kKindMask) != kConsumed || !(h.size_and_kind & kFenceBit))
        return false;
    }
    records_in_index += q.size();
  }
  return records_in_ring == records_in_index;
}

}  // namespace sluice
