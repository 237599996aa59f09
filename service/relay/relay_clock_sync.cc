#include "service/relay/relay_clock_sync.h"

#include <time.h>

#include <algorithm>

#include "perfetto/common/builtin_clock.pb.h"
#include "shm/base/clock.h"

namespace sluice {
namespace {

bool BootTime(const perfetto::protos::ClockSnapshot& s, int64_t* out) {
  for (const auto& c : s.clocks()) {
    if (c.clock_id() == perfetto::protos::BUILTIN_CLOCK_BOOTTIME) {
      *out = static_cast<int64_t>(c.timestamp());
      return true;
    }
  }
  return false;
}

}  // namespace

perfetto::protos::ClockSnapshot ReadRelayClocks() {
  struct {
    clockid_t clock;
    perfetto::protos::BuiltinClock id;
  } const kClocks[] = {
      {CLOCK_BOOTTIME, perfetto::protos::BUILTIN_CLOCK_BOOTTIME},
      {CLOCK_MONOTONIC, perfetto::protos::BUILTIN_CLOCK_MONOTONIC},
      {CLOCK_MONOTONIC_RAW, perfetto::protos::BUILTIN_CLOCK_MONOTONIC_RAW},
      {CLOCK_REALTIME, perfetto::protos::BUILTIN_CLOCK_REALTIME},
  };
  uint64_t readings[4];
  for (size_t i = 0; i < 4; i++) readings[i] = ClockNs(kClocks[i].clock);
  perfetto::protos::ClockSnapshot s;
  for (size_t i = 0; i < 4; i++) {
    auto* c = s.add_clocks();
    c->set_clock_id(kClocks[i].id);
    c->set_timestamp(readings[i]);
  }
  return s;
}

ClockOffsetEstimate EstimateClockOffset(const ClockRound& r) {
  ClockOffsetEstimate e;
  int64_t t1c, t1h, t2c, t2h;
  if (!BootTime(r.t1c, &t1c) || !BootTime(r.t1h, &t1h) || !BootTime(r.t2c, &t2c) ||
      !BootTime(r.t2h, &t2h))
    return e;
  if (t2c < t1c || t2h < t1h) return e;
  const int64_t lo = std::max(t1c - t1h, t2c - t2h);
  const int64_t hi = t2c - t1h;
  if (lo > hi) return e;
  // Upstream's: the mean of ((t1c + t2c) / 2 - t1h) and (t2c - (t1h + t2h) / 2),
  // with its integer halvings, so both readers agree to the nanosecond.
  const int64_t offset1 = (t1c + t2c) / 2 - t1h;
  const int64_t offset2 = t2c - (t1h + t2h) / 2;
  e.offset_ns = (offset1 + offset2) / 2;
  e.error_ns = static_cast<uint64_t>(std::max(e.offset_ns - lo, hi - e.offset_ns));
  e.valid = true;
  return e;
}

perfetto::protos::RemoteClockSync MakeRemoteClockSync(const ClockRound& r) {
  perfetto::protos::RemoteClockSync sync;
  auto* first = sync.add_synced_clocks();
  *first->mutable_client_clocks() = r.t1c;
  *first->mutable_host_clocks() = r.t1h;
  auto* second = sync.add_synced_clocks();
  *second->mutable_client_clocks() = r.t2c;
  *second->mutable_host_clocks() = r.t2h;
  return sync;
}

}  // namespace sluice
