#include "user/query/importer/sequence_loss_tracker.h"

namespace sluice {
const std::array<const char*, SequenceLossTracker::kCauses> SequenceLossTracker::kCauseNames = {
    "read_gap",         "chunk_corrupted", "orphan_continuation", "reassembly_gap", "reassembly_broken_chain",
    "overwrite",        "writer_abort",    "smb_full"};

void SequenceLossTracker::OnPacket(const PacketFlags& packet) {
  auto [it, inserted] = sequences_.try_emplace(packet.sequence);
  Sequence& seq = it->second;
  if (packet.has_sequence && !inserted && packet.previous_packet_dropped != 0) {
    seq.losses++;
    for (size_t i = 0; i < kCauses; ++i)
      if (packet.previous_packet_dropped & (2u << i)) seq.causes[i]++;
    seq.incremental_valid = false;  // What the lost packets set up is gone.
  }
  if (packet.incremental_state_cleared || (packet.sequence_flags & kIncrementalStateCleared))
    seq.incremental_valid = true;
  if (packet.sequence_flags & kNeedsIncrementalState) {
    seq.needs_incremental++;
    if (!seq.incremental_valid) seq.needs_incremental_skipped++;
  }
}

std::map<uint32_t, SequenceLossTracker::BufferLoss> SequenceLossTracker::PerBuffer(
    const std::vector<std::pair<uint64_t, uint32_t>>& writers) const {
  std::map<uint32_t, BufferLoss> out;
  for (const auto& [sequence, buffer] : writers) {
    if (sequence > UINT32_MAX) continue;
    auto it = sequences_.find(static_cast<uint32_t>(sequence));
    if (it == sequences_.end()) continue;
    const Sequence& seq = it->second;
    BufferLoss& b = out[buffer];
    b.packet_loss += seq.losses;
    if (seq.needs_incremental_skipped > 0 && seq.needs_incremental_skipped == seq.needs_incremental)
      b.incremental_sequences_dropped++;
    for (size_t i = 0; i < kCauses; ++i) b.causes[i] += seq.causes[i];
  }
  return out;
}

}  // namespace sluice
