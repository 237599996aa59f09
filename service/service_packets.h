// The packets the service writes into every trace by itself: the trace
// config, clock snapshots (at start and at end) and the TraceStats at the
// end. They form one sequence of their own,
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
class TraceConfig;
class TraceStats;
}  // namespace perfetto::protos

namespace sluice {

inline constexpr uint32_t kServicePacketSequenceId = 1;
inline constexpr uint32_t kFirstProducerSequenceId = 2;

// A ClockSnapshot of BOOTTIME (the primary trace clock), MONOTONIC, REALTIME,
// MONOTONIC_RAW and the coarse clocks, read back to back. Clock ids are
// upstream's builtin ids (protos/perfetto/common/builtin_clock.proto).
std::string MakeClockSnapshotPacket();
std::string MakeTraceConfigPacket(const perfetto::protos::TraceConfig& config);
std::string MakeTraceStatsPacket(const perfetto::protos::TraceStats& stats);

}  // namespace sluice

#endif  // SLUICE_SERVICE_SERVICE_PACKETS_H_
