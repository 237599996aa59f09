// The relay's clock synchronisation, measured over the relay link itself
// (protos/sluice/relay.proto, RelayClockSync): a round is four readings,
// taken in this order in real time:
//
//   t1c  the relay (client) reads its clocks and sends PING
//   t1h  the host reads its clocks on receipt and answers PONG
//   t2c  the relay reads its clocks on receipt and sends READINGS
//   t2h  the host reads its clocks on receipt
//
// With the true offset `theta` (client clock = host clock + theta) and
// nothing but causality assumed, t1h falls between t1c and t2c on the
// client's clock and t2c between t1h and t2h on the host's:
//
//   theta in [max(t1c - t1h, t2c - t2h), t2c - t1h]
//
// The estimate is the one upstream's trace_processor computes from the same
// four readings (the mean of the two half-round-trip midpoints), so what
// the trace states is what the readers use; its error bound is its distance
// to the far end of that interval. A round whose interval is empty (a clock
// stepped) is refused. The host keeps the round with the smallest bound of
// each burst of rounds.
#ifndef SLUICE_SERVICE_RELAY_RELAY_CLOCK_SYNC_H_
#define SLUICE_SERVICE_RELAY_RELAY_CLOCK_SYNC_H_

#include <cstdint>

#include "perfetto/trace/clock_snapshot.pb.h"
#include "perfetto/trace/remote_clock_sync.pb.h"

namespace sluice {

// BOOTTIME (the traces' clock), MONOTONIC, MONOTONIC_RAW and REALTIME, read
// back to back, as upstream builtin clock ids.
perfetto::protos::ClockSnapshot ReadRelayClocks();

struct ClockRound {
  perfetto::protos::ClockSnapshot t1c, t1h, t2c, t2h;
};

struct ClockOffsetEstimate {
  bool valid = false;
  int64_t offset_ns = 0;   // Client boot clock minus host boot clock.
  uint64_t error_ns = 0;   // The true offset is within offset_ns +- error_ns.
};

// From the rounds' BOOTTIME readings.
ClockOffsetEstimate EstimateClockOffset(const ClockRound& round);

// The round as the trace carries it: two SyncedClocks, (t1c, t1h), (t2c, t2h).
perfetto::protos::RemoteClockSync MakeRemoteClockSync(const ClockRound& round);

}  // namespace sluice

#endif  // SLUICE_SERVICE_RELAY_RELAY_CLOCK_SYNC_H_
