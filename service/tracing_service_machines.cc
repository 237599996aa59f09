// TracingService: machines relayed to this service (service/relay/): their
// ids, clock syncs and losses, and how each session's trace shows them.
#include "perfetto/trace/remote_clock_sync.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "service/service_packets.h"
#include "service/tracing_service.h"

namespace sluice {

uint32_t TracingService::AddRelayedMachine(const std::string& name) {
  ServiceLock lock(this);
  uint32_t id = 0;
  for (auto& [mid, m] : machines_)
    if (m.name == name) id = mid;
  if (id == 0) {
    id = machines_.empty() ? 1 : machines_.rbegin()->first + 1;
    machines_[id].name = name;
  }
  RelayedMachine& m = machines_[id];
  m.links++;
  for (auto& [sid, s] : sessions_) {
    if (s->state == SessionState::kDisabled || s->cloned_from) continue;
    // A new entry counts this connect itself.
    const bool known = s->machines.count(id) != 0;
    sluice::protos::RelayMachineStats* e = SessionMachineLocked(s.get(), id);
    if (known) e->set_connects(e->connects() + 1);
  }
  Log("sluiced: machine " + std::to_string(id) + " '" + name + "' connected through a relay");
  return id;
}

void TracingService::RelayedMachineGone(uint32_t machine_id, uint64_t chunks_lost_in_transit) {
  ServiceLock lock(this);
  auto it = machines_.find(machine_id);
  if (it == machines_.end()) return;
  if (it->second.links) it->second.links--;
  it->second.cut_frames += chunks_lost_in_transit;
  for (auto& [sid, s] : sessions_) {
    if (s->state == SessionState::kDisabled || s->cloned_from) continue;
    auto e = s->machines.find(machine_id);
    if (e == s->machines.end()) continue;
    e->second.set_disconnects(e->second.disconnects() + 1);
    e->second.set_chunks_lost_in_transit(e->second.chunks_lost_in_transit() + chunks_lost_in_transit);
  }
  Log("sluiced: machine " + std::to_string(machine_id) + " '" + it->second.name +
      "': its relay disconnected");
}

void TracingService::UncountCutFrame(uint32_t machine_id) {
  ServiceLock lock(this);
  auto it = machines_.find(machine_id);
  if (it == machines_.end() || it->second.cut_frames == 0) return;
  it->second.cut_frames--;
  for (auto& [sid, s] : sessions_) {
    auto e = s->machines.find(machine_id);
    if (e != s->machines.end() && e->second.chunks_lost_in_transit() > 0)
      e->second.set_chunks_lost_in_transit(e->second.chunks_lost_in_transit() - 1);
  }
}

void TracingService::SetMachineClockSync(uint32_t machine_id,
                                         const perfetto::protos::RemoteClockSync& sync,
                                         int64_t offset_ns, uint64_t error_ns) {
  ServiceLock lock(this);
  auto it = machines_.find(machine_id);
  if (it == machines_.end()) return;
  RelayedMachine& m = it->second;
  m.sync_packet = MakeRemoteClockSyncPacket(machine_id, sync);
  m.sync_generation++;
  m.clock_offset_ns = offset_ns;
  m.clock_error_ns = error_ns;
}

void TracingService::AddMachineLosses(uint32_t machine_id, BufferId buffer, uint64_t chunks,
                                      uint64_t packets, uint64_t bytes) {
  ServiceLock lock(this);
  auto b = buffers_.find(buffer);
  if (b == buffers_.end()) return;  // Its session is gone: nobody to tell.
  TracingSession* s = FindSessionLocked(b->second.session);
  if (!s) return;
  size_t index = 0;
  while (index < s->buffers.size() && s->buffers[index] != buffer) index++;
  sluice::protos::RelayMachineStats* e = SessionMachineLocked(s, machine_id);
  e->set_chunks_dropped(e->chunks_dropped() + chunks);
  e->set_packets_dropped(e->packets_dropped() + packets);
  e->set_bytes_dropped(e->bytes_dropped() + bytes);
  while (e->chunks_dropped_per_buffer_size() < static_cast<int>(s->buffers.size()))
    e->add_chunks_dropped_per_buffer(0);
  if (index < s->buffers.size())
    e->set_chunks_dropped_per_buffer(static_cast<int>(index),
                                     e->chunks_dropped_per_buffer(static_cast<int>(index)) + chunks);
}

sluice::protos::RelayMachineStats* TracingService::SessionMachineLocked(TracingSession* s,
                                                                         uint32_t id) {
  auto [it, inserted] = s->machines.try_emplace(id);
  if (inserted) {
    it->second.set_machine_id(id);
    auto m = machines_.find(id);
    if (m != machines_.end()) {
      it->second.set_machine_name(m->second.name);
      if (m->second.links) it->second.set_connects(1);
    }
  }
  return &it->second;
}

void TracingService::EmitMachineSyncsLocked(TracingSession* s, std::vector<std::string>* out) {
  for (const auto& [id, m] : machines_) {
    if (m.sync_generation == 0) continue;
    uint64_t& written = s->machine_sync_written[id];
    if (written == m.sync_generation) continue;
    written = m.sync_generation;
    out->push_back(m.sync_packet);
    sluice::protos::RelayMachineStats* e = SessionMachineLocked(s, id);
    e->set_clock_syncs(e->clock_syncs() + 1);
    if (m.clock_error_ns > e->max_clock_error_ns()) e->set_max_clock_error_ns(m.clock_error_ns);
  }
}

}  // namespace sluice
