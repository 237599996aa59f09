// SequenceLossTracker: upstream's per-buffer loss figures from what each
// packet sequence says about itself.
//
// A writer marks a packet with previous_packet_dropped (a bitmask since
// Perfetto v50: bit 0 some loss, bits 1-8 its cause) when packets before it
// on its sequence were lost, and with sequence_flags when it needs (2) or
// resets (1) the sequence's incremental state. Per sequence this counts:
//   - losses: packets with a non-zero previous_packet_dropped, except the
//     first packet of the sequence (every writer's first packet says so);
//   - each cause bit among read_gap (2), chunk_corrupted (4),
//     orphan_continuation (8), reassembly_gap (16), reassembly_broken_chain
//     (32), overwrite (64), writer_abort (128), smb_full (256);
//   - packets needing incremental state, and those of them that came while
//     it was not valid (never reset, or a loss since).
// A TraceStats packet maps sequences to buffers (writer_stats); the figures
// of the sequences seen before it are summed per buffer, as upstream:
// traced_buf_sequence_packet_loss, traced_buf_incremental_sequences_dropped
// (a sequence all of whose packets needing incremental state were dropped)
// and traced_buf_data_loss_<cause>.
#ifndef SLUICE_USER_QUERY_IMPORTER_SEQUENCE_LOSS_TRACKER_H_
#define SLUICE_USER_QUERY_IMPORTER_SEQUENCE_LOSS_TRACKER_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sluice {

class SequenceLossTracker {
 public:
  static constexpr size_t kCauses = 8;
  // TracePacket.sequence_flags.
  static constexpr uint32_t kIncrementalStateCleared = 1;
  static constexpr uint32_t kNeedsIncrementalState = 2;
  // The stat name suffix of each cause bit, from bit 1 up.
  static const std::array<const char*, kCauses> kCauseNames;

  struct PacketFlags {
    bool has_sequence = false;  // trusted_packet_sequence_id present
    uint32_t sequence = 0;
    uint32_t previous_packet_dropped = 0;
    uint32_t sequence_flags = 0;
    bool incremental_state_cleared = false;
  };
  void OnPacket(const PacketFlags& packet);
  // Whether `sequence`'s incremental state is valid after the packets seen
  // so far: set up (state cleared) and no loss since. A packet that needs
  // it while it is not is skipped, as upstream skips it.
  bool IncrementalStateValid(uint32_t sequence) const {
    auto it = sequences_.find(sequence);
    return it != sequences_.end() && it->second.incremental_valid;
  }

  struct BufferLoss {
    int64_t packet_loss = 0;
    int64_t incremental_sequences_dropped = 0;
    std::array<int64_t, kCauses> causes{};
  };
  // The figures per buffer now, for a TraceStats whose writer_stats are
  // (sequence, buffer) pairs; a sequence never seen adds nothing.
  std::map<uint32_t, BufferLoss> PerBuffer(const std::vector<std::pair<uint64_t, uint32_t>>& writers) const;

 private:
  struct Sequence {
    int64_t losses = 0;
    std::array<int64_t, kCauses> causes{};
    int64_t needs_incremental = 0, needs_incremental_skipped = 0;
    bool incremental_valid = false;
  };
  std::unordered_map<uint32_t, Sequence> sequences_;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_SEQUENCE_LOSS_TRACKER_H_
