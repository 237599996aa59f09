#include "service/service_packets.h"

#include <time.h>
#include <unistd.h>

#include "perfetto/common/builtin_clock.pb.h"
#include "perfetto/config/trace_config.pb.h"
#include "perfetto/common/trace_stats.pb.h"
#include "perfetto/trace/clock_snapshot.pb.h"
#include "perfetto/trace/remote_clock_sync.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "service/sluice_extensions.h"
#include "sluice/service_stats.pb.h"

namespace sluice {
namespace {

perfetto::protos::TracePacket ServicePacket() {
  perfetto::protos::TracePacket packet;
  packet.set_timestamp(BootTimeNs());
  packet.set_trusted_uid(static_cast<int32_t>(getuid()));
  packet.set_trusted_packet_sequence_id(kServicePacketSequenceId);
  packet.set_trusted_pid(static_cast<int32_t>(getpid()));
  return packet;
}

}  // namespace

std::string MakeClockSnapshotPacket() {
  using perfetto::protos::BuiltinClock;
  struct {
    clockid_t clock;
    BuiltinClock id;
  } const kClocks[] = {
      {CLOCK_BOOTTIME, perfetto::protos::BUILTIN_CLOCK_BOOTTIME},
      {CLOCK_MONOTONIC, perfetto::protos::BUILTIN_CLOCK_MONOTONIC},
      {CLOCK_REALTIME, perfetto::protos::BUILTIN_CLOCK_REALTIME},
      {CLOCK_MONOTONIC_RAW, perfetto::protos::BUILTIN_CLOCK_MONOTONIC_RAW},
      {CLOCK_REALTIME_COARSE, perfetto::protos::BUILTIN_CLOCK_REALTIME_COARSE},
      {CLOCK_MONOTONIC_COARSE, perfetto::protos::BUILTIN_CLOCK_MONOTONIC_COARSE},
  };
  perfetto::protos::TracePacket packet = ServicePacket();
  auto* snapshot = packet.mutable_clock_snapshot();
  for (const auto& c : kClocks) {
    auto* clock = snapshot->add_clocks();
    clock->set_clock_id(static_cast<uint32_t>(c.id));
    clock->set_timestamp(ClockNs(c.clock));
  }
  snapshot->set_primary_trace_clock(perfetto::protos::BUILTIN_CLOCK_BOOTTIME);
  return packet.SerializeAsString();
}

std::string MakeTraceConfigPacket(const perfetto::protos::TraceConfig& config) {
  perfetto::protos::TracePacket packet = ServicePacket();
  *packet.mutable_trace_config() = config;
  return packet.SerializeAsString();
}

std::string MakeExtensionDescriptorPacket() {
  // The set depends only on what was compiled in: built once.
  static const google::protobuf::FileDescriptorSet kSet = SluiceExtensionSet();
  perfetto::protos::TracePacket packet = ServicePacket();
  *packet.mutable_extension_descriptor()->mutable_extension_set() = kSet;
  return packet.SerializeAsString();
}

std::string MakeTriggerPacket(const std::string& trigger_name, const std::string& producer_name,
                              int32_t producer_uid, uint64_t boot_ns) {
  perfetto::protos::TracePacket packet = ServicePacket();
  packet.set_timestamp(boot_ns);
  auto* trigger = packet.mutable_trigger();
  trigger->set_trigger_name(trigger_name);
  trigger->set_producer_name(producer_name);
  trigger->set_trusted_producer_uid(producer_uid);
  return packet.SerializeAsString();
}

std::string MakeTraceStatsPacket(const perfetto::protos::TraceStats& stats) {
  perfetto::protos::TracePacket packet = ServicePacket();
  perfetto::protos::TraceStats* out = packet.mutable_trace_stats();
  *out = stats;
  auto* faults = out->mutable_sluice_service_stats();
  const uint64_t chunks_lost = faults->chunks_lost_being_written() + faults->chunks_lost_writer_unknown();
  if (chunks_lost && out->buffer_stats_size() > 0 && !faults->has_chunks_lost_buffer()) {
    auto* first = out->mutable_buffer_stats(0);
    first->set_trace_writer_packet_loss(first->trace_writer_packet_loss() + chunks_lost);
    faults->set_chunks_lost_buffer(0);
  }
  return packet.SerializeAsString();
}

std::string MakeRemoteClockSyncPacket(uint32_t machine_id,
                                      const perfetto::protos::RemoteClockSync& sync) {
  perfetto::protos::TracePacket packet = ServicePacket();
  packet.clear_timestamp();  // Read before timestamps; ours would be the wrong clock.
  packet.set_machine_id(machine_id);
  *packet.mutable_remote_clock_sync() = sync;
  return packet.SerializeAsString();
}

std::string MakeMachineTraceStatsPacket(const sluice::protos::RelayMachineStats& machine) {
  perfetto::protos::TracePacket packet = ServicePacket();
  packet.set_machine_id(machine.machine_id());
  perfetto::protos::TraceStats* stats = packet.mutable_trace_stats();
  for (uint64_t chunks : machine.chunks_dropped_per_buffer())
    stats->add_buffer_stats()->set_trace_writer_packet_loss(chunks);
  *stats->mutable_sluice_service_stats()->add_relay_machines() = machine;
  return packet.SerializeAsString();
}

}  // namespace sluice
