// The producer shared-memory buffer (SMB) ABI.
//
// A producer hands trace packets to the service through one shared memory
// region (a memfd the service creates and passes over the socket). There are
// no locks: ownership of each chunk moves between the producer and the service
// through a 2-bit state in its page's header word, changed only by
// compare-and-swap. docs/ABI.md has the full picture and the commit protocol.
//
// Layout (byte offsets; P = page size, 4 KiB to 64 KiB in 4 KiB steps):
//
//   SMB    ┌──────────┬──────────┬──────────┬─────┐
//          │ page 0   │ page 1   │ page 2   │ ... │   N pages, N * P bytes
//          └──────────┴──────────┴──────────┴─────┘
//   page   ┌────────┬─────────┬─────────┬─────┬─────────┬──────┐
//          │ header │ chunk 0 │ chunk 1 │ ... │ chunk k │ tail │  k+1 = 1,2,4,7,14
//          │ 8 B    │ C bytes │         │     │         │      │  C = ((P-8)/(k+1)) & ~3
//          └────────┴─────────┴─────────┴─────┴─────────┴──────┘
//   chunk  ┌──────────────┬───────────────────────────────────────┐
//          │ ChunkHeader  │ payload: [size][fragment][size][...]   │
//          │ 8 B          │ size = 4-byte redundant varint         │
//          └──────────────┴───────────────────────────────────────┘
//
// Page header word (32 bits, PageHeader::header_bitmap):
//
//    31  30 29 28  27 26  25 24  ...  3  2  1  0
//   ┌───┬────────┬──────┬──────┬─────┬──────┬──────┐
//   │ 0 │ layout │ st13 │ st12 │ ... │ st1  │ st0  │   st_i: state of chunk i
//   └───┴────────┴──────┴──────┴─────┴──────┴──────┘
//   layout: 0 = not partitioned, 1..5 = 1, 2, 4, 7, 14 chunks.
//   All-zero memory is a valid SMB: every page not partitioned, every chunk Free.
//
// Chunk state machine. Each arrow is one CAS on the page header word; the
// thread named is the only one that makes that transition:
//
//   Free ──producer──▶ BeingWritten ──producer──▶ Complete
//    ▲                                               │
//    └──────service──── BeingRead ◀──service─────────┘
//
// A page is partitioned by the producer (layout 0 -> L, with the chunk it takes
// BeingWritten in the same CAS) and returned to "not partitioned" by the
// service when it frees the page's last non-free chunk, so the producer may
// choose another layout next time.
//
// Memory order:
//  - producer, Free -> BeingWritten: acquire, pairs with the service's release
//    when it freed the chunk (the service's reads of the old contents happen
//    before the producer overwrites them).
//  - producer, BeingWritten -> Complete: release, pairs with the service's
//    acquire load in TryAcquireChunkForReading (all header and payload writes
//    are visible to the service once it sees Complete).
//  - service, Complete -> BeingRead: acquire (see above).
//  - service, BeingRead -> Free: release, pairs with the producer's acquire.
//
// Trust. The producer may be buggy or hostile: everything the service reads
// from the SMB (states, layouts, chunk headers, packet sizes) is untrusted and
// bounds-checked. The service copies a chunk out before it parses it, so a
// producer that keeps scribbling cannot change what was validated. The
// producer trusts the service (it runs with more privilege).
//
// No size_t or long here: 32- and 64-bit producers share this ABI.
#ifndef SLUICE_SHM_SHM_ABI_H_
#define SLUICE_SHM_SHM_ABI_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace sluice {

inline constexpr uint32_t kMinPageSize = 4096;
inline constexpr uint32_t kMaxPageSize = 65536;
inline constexpr uint32_t kPageSizeStep = 4096;
inline constexpr uint32_t kMaxChunksPerPage = 14;
// Writer ids are 10 bits; 0 means "no writer".
inline constexpr uint16_t kMaxWriterId = 1023;
// Packet count is 10 bits of ChunkHeader::packets.
inline constexpr uint16_t kMaxPacketsPerChunk = 1023;
inline constexpr uint32_t kPacketHeaderSize = 4;  // the longest size header (a varint)

// Perfetto's values (its SharedMemoryABI::ChunkState): upstream's producers
// (traced_probes, SDK apps) write into sluiced's SMBs, and their Complete
// must be ours.
enum class ChunkState : uint32_t {
  kFree = 0,
  kBeingWritten = 1,
  kBeingRead = 2,
  kComplete = 3,
};

// Page layouts: how many chunks a page is split into.
enum class PageLayout : uint32_t {
  kNotPartitioned = 0,
  kDiv1 = 1,
  kDiv2 = 2,
  kDiv4 = 3,
  kDiv7 = 4,
  kDiv14 = 5,
};
inline constexpr uint32_t kNumLayouts = 6;
inline constexpr uint32_t kChunksForLayout[kNumLayouts] = {0, 1, 2, 4, 7, 14};

struct PageHeader {
  static constexpr uint32_t kLayoutShift = 28;
  static constexpr uint32_t kLayoutMask = 0x7u << kLayoutShift;
  static constexpr uint32_t kStateBits = 2;
  static constexpr uint32_t kStateMask = 0x3;
  static constexpr uint32_t kAllStatesMask = (1u << (kMaxChunksPerPage * 2)) - 1;

  // Layout and chunk states; see the bit map above. Changed only by CAS.
  std::atomic<uint32_t> header_bitmap;
  // Zero. Keeps chunks 4-byte aligned and the header 8 bytes.
  uint32_t reserved;
};

// The chunk header. Written by the producer while the chunk is BeingWritten
// (plain stores: no one else reads a chunk in that state); published to the
// service by the release CAS to Complete. Read by the service only on its own
// copy of the chunk.
struct ChunkHeader {
  enum Flags : uint16_t {
    // The first packet in this chunk is the continuation of the last packet
    // of the writer's previous chunk.
    kFirstPacketContinuesFromPrevChunk = 1 << 0,
    // The last packet in this chunk goes on in the writer's next chunk.
    kLastPacketContinuesOnNextChunk = 1 << 1,
    // Some bytes of this chunk (nested message sizes) will arrive as patches.
    kChunkNeedsPatching = 1 << 2,
  };
  static constexpr uint16_t kPacketCountMask = 0x3ff;
  static constexpr uint16_t kFlagsShift = 10;

  // Per writer, +1 for every chunk the writer takes; wraps at 2^32.
  uint32_t chunk_id;
  // 1..kMaxWriterId.
  uint16_t writer_id;
  // Bits 0..9: packets (and fragments) that begin in this chunk.
  // Bits 10..15: Flags.
  uint16_t packets;

  uint16_t packet_count() const { return packets & kPacketCountMask; }
  uint16_t flags() const { return static_cast<uint16_t>(packets >> kFlagsShift); }
  static uint16_t PackPackets(uint16_t count, uint16_t flags) {
    return static_cast<uint16_t>((count & kPacketCountMask) | (flags << kFlagsShift));
  }
};

static_assert(sizeof(PageHeader) == 8, "PageHeader is part of the ABI");
static_assert(sizeof(ChunkHeader) == 8, "ChunkHeader is part of the ABI");
static_assert(std::atomic<uint32_t>::is_always_lock_free,
              "page header CAS must be lock-free to work across processes");
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t),
              "an atomic word must have the layout of a plain word");
static_assert(static_cast<uint32_t>(ChunkState::kFree) == 0 &&
                  static_cast<uint32_t>(PageLayout::kNotPartitioned) == 0,
              "zero-initialised memory means every page unpartitioned and free");
static_assert(kMaxWriterId < (1u << 10), "writer ids are 10 bits");

// Chunk geometry for a page size and layout. Chunk sizes are multiples of 4
// so that headers and size fields stay aligned.
inline constexpr uint32_t ChunkSizeFor(uint32_t page_size, PageLayout layout) {
  uint32_t n = kChunksForLayout[static_cast<uint32_t>(layout)];
  if (n == 0) return 0;
  return ((page_size - static_cast<uint32_t>(sizeof(PageHeader))) / n) & ~3u;
}
static_assert(ChunkSizeFor(4096, PageLayout::kDiv14) == 292);
static_assert(ChunkSizeFor(4096, PageLayout::kDiv1) == 4088);

// A view of the whole SMB: addressing, state queries and the CAS transitions.
// Both sides use it; the service calls only the methods marked "service" and
// treats their inputs as untrusted (a method that takes an index checks it).
//
// Thread-safety: all methods may be called concurrently from any thread of
// either process; state changes are single CAS operations.
class SharedMemoryAbi {
 public:
  SharedMemoryAbi() = default;
  // `start` is page-aligned; `size` a multiple of `page_size`.
  SharedMemoryAbi(uint8_t* start, uint32_t size, uint32_t page_size);

  static bool IsValidPageSize(uint32_t page_size) {
    return page_size >= kMinPageSize && page_size <= kMaxPageSize &&
           page_size % kPageSizeStep == 0;
  }

  uint8_t* start() const { return start_; }
  uint32_t size() const { return size_; }
  uint32_t page_size() const { return page_size_; }
  uint32_t num_pages() const { return num_pages_; }

  PageHeader* page_header(uint32_t page) const {
    return reinterpret_cast<PageHeader*>(start_ + static_cast<size_t>(page) * page_size_);
  }
  // Relaxed: a hint. Decisions are made by CAS on the value it returns.
  uint32_t LoadHeaderRelaxed(uint32_t page) const {
    return page_header(page)->header_bitmap.load(std::memory_order_relaxed);
  }
  static PageLayout LayoutOf(uint32_t header) {
    return static_cast<PageLayout>((header & PageHeader::kLayoutMask) >> PageHeader::kLayoutShift);
  }
  static uint32_t NumChunksOf(uint32_t header) {
    uint32_t layout = (header & PageHeader::kLayoutMask) >> PageHeader::kLayoutShift;
    return layout < kNumLayouts ? kChunksForLayout[layout] : 0;
  }
  static ChunkState StateOf(uint32_t header, uint32_t chunk) {
    return static_cast<ChunkState>((header >> (chunk * PageHeader::kStateBits)) &
                                   PageHeader::kStateMask);
  }
  static uint32_t WithState(uint32_t header, uint32_t chunk, ChunkState s) {
    uint32_t shift = chunk * PageHeader::kStateBits;
    return (header & ~(PageHeader::kStateMask << shift)) | (static_cast<uint32_t>(s) << shift);
  }

  // Start of chunk `chunk` of `page` for a page with `layout`.
  uint8_t* chunk_begin(uint32_t page, PageLayout layout, uint32_t chunk) const {
    return start_ + static_cast<size_t>(page) * page_size_ + sizeof(PageHeader) +
           static_cast<size_t>(chunk) * ChunkSizeFor(page_size_, layout);
  }

  // --- Producer side. ---

  // Partitions an unpartitioned page with `layout` and takes chunk 0
  // (Free -> BeingWritten) in the same CAS. False if the page was not free.
  bool TryPartitionPage(uint32_t page, PageLayout layout);
  // Free -> BeingWritten for a chunk of an already partitioned page.
  // `expected_header` is the header the caller saw.
  bool TryAcquireChunkForWriting(uint32_t page, uint32_t chunk, uint32_t expected_header);
  // BeingWritten -> Complete, release. Retries the CAS while other chunks of
  // the page change state; the caller owns this chunk so it always succeeds.
  void MarkChunkComplete(uint32_t page, uint32_t chunk);

  // --- Service side (inputs untrusted). ---

  enum class AcquireResult { kOk, kBadIndex, kNotComplete };
  // Complete -> BeingRead, acquire. On kOk, *layout is the page's layout.
  AcquireResult TryAcquireChunkForReading(uint32_t page, uint32_t chunk, PageLayout* layout);
  // BeingRead -> Free, release. When that leaves every chunk of the page
  // Free, the page goes back to "not partitioned" in the same CAS.
  void ReleaseChunkAsFree(uint32_t page, uint32_t chunk);

 private:
  uint8_t* start_ = nullptr;
  uint32_t size_ = 0;
  uint32_t page_size_ = 0;
  uint32_t num_pages_ = 0;
};

// A fragment's size header: a varint of at most kPacketHeaderSize bytes.
// sluice's writers reserve the 4 bytes and write the redundant form (its
// size is known only when the packet ends); upstream's writers do the same,
// but write the shortest form where they know the size up front, and
// upstream's service reads either. So does this: reads the header at `p`
// within `avail` bytes and returns its length (1 to 4), or 0 when no byte
// of the first four ends the varint (untrusted input).
inline uint32_t ReadPacketSizeUntrusted(const uint8_t* p, uint32_t avail, uint32_t* size) {
  const uint32_t n = avail < kPacketHeaderSize ? avail : kPacketHeaderSize;
  uint32_t value = 0;
  for (uint32_t i = 0; i < n; i++) {
    value |= static_cast<uint32_t>(p[i] & 0x7f) << (7 * i);
    if ((p[i] & 0x80) == 0) {
      *size = value;
      return i + 1;
    }
  }
  return 0;
}

// The size upstream's writers put in the header of a packet's last fragment
// when they abandon the packet (out of SMB in drop mode): the largest 4-byte
// varint. A packet lost by its writer (trace_writer_packet_loss), not a
// malformed chunk.
inline constexpr uint32_t kPacketSizeDropPacket = (1u << 28) - 1;

}  // namespace sluice

#endif  // SLUICE_SHM_SHM_ABI_H_
