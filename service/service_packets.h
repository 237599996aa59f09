// The packets the service writes into every trace by itself: the trace
// config, the descriptors of sluice's own fields, clock snapshots (at start
// and at end) and the TraceStats at the end. They form one sequence of their own,
// trusted_packet_sequence_id = kServicePacketSequenceId, which no producer
// sequence uses (those start at kFirstProducerSequenceId).
//
// Built with libprotobuf messages: a handful per trace, off every hot path.
#ifndef SLUICE_SERVICE_SERVICE_PACKETS_H_
#define SLUICE_SERVICE_SERVICE_PACKETS_H_

#include <cstdint>
#include <string>
#include "shm/base/clock.h"

namespace perfetto::protos {
class RemoteClockSync;
class TraceConfig;
class TraceStats;
}  // namespace perfetto::protos

namespace sluice {
namespace protos {
class RelayMachineStats;
}  // namespace protos

inline constexpr uint32_t kServicePacketSequenceId = 1;
inline constexpr uint32_t kFirstProducerSequenceId = 2;

// A ClockSnapshot of BOOTTIME (the primary trace clock), MONOTONIC, REALTIME,
// MONOTONIC_RAW and the coarse clocks, read back to back. Clock ids are
// upstream's builtin ids (protos/perfetto/common/builtin_clock.proto).
std::string MakeClockSnapshotPacket();
std::string MakeTraceConfigPacket(const perfetto::protos::TraceConfig& config);

// ExtensionDescriptor (TracePacket field 72) holding SluiceExtensionSet()
// (service/sluice_extensions.h): written once, at the head of every trace,
// so that upstream's tools can decode sluice's fields (docs/PROTOS.md).
std::string MakeExtensionDescriptorPacket();

// A Trigger packet (TracePacket field 46): a trigger the session acted on,
// timestamped (BOOTTIME) when it arrived.
std::string MakeTriggerPacket(const std::string& trigger_name, const std::string& producer_name,
                              int32_t producer_uid, uint64_t boot_ns);

// The TraceStats as the service counted them, plus the one change that lets
// upstream's trace_processor see losses it cannot read from sluice's own
// message: sluice_service_stats' chunks_lost_being_written +
// chunks_lost_writer_unknown are added to the first buffer's
// trace_writer_packet_loss (traced_buf_trace_writer_packet_loss, severity
// data_loss, in trace_processor), and sluice_service_stats.chunks_lost_buffer
// says so (protos/sluice/service_stats.proto). Only in the trace: the
// consumer's GetTraceStats() keeps the service's own figures.
std::string MakeTraceStatsPacket(const perfetto::protos::TraceStats& stats);

// A relayed machine's clocks against ours (service/relay/), stamped with its
// machine_id: upstream's trace_processor maps the machine's timestamps onto
// this machine's timeline with it.
std::string MakeRemoteClockSyncPacket(uint32_t machine_id,
                                      const perfetto::protos::RemoteClockSync& sync);

// A relayed machine's losses, for upstream's trace_processor: a TraceStats
// stamped with its machine_id whose buffer_stats[i].trace_writer_packet_loss
// are the chunks its relay dropped for buffer i (a data_loss stat of that
// machine there), and `machine` itself in sluice_service_stats.
std::string MakeMachineTraceStatsPacket(const sluice::protos::RelayMachineStats& machine);

}  // namespace sluice

#endif  // SLUICE_SERVICE_SERVICE_PACKETS_H_
