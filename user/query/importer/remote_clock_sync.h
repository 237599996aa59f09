// RemoteClockSync: puts a relayed machine's timestamps on the host's
// timeline, from the RemoteClockSync packets the host's service writes for
// it (TracePacket.remote_clock_sync, field 107, stamped with the machine's
// machine_id; protos/perfetto/trace/remote_clock_sync.proto, docs/RELAY.md).
//
// What a packet holds and what is taken from it
//   synced_clocks[i] alternate sides of round trips: client (the relayed
//   machine) reads its clocks, host reads its own, client, host:
//
//       client  t1c ──────────► t2c
//                  ╲          ╱    ╲
//       host        t1h ─────       t2h
//
//   For each clock both sides read, each consecutive pair of entries gives
//   two estimates of (client - host): the client's round trip,
//   (t1c + t2c) / 2 - t1h, and the host's, t2c - (t1h + t2h) / 2. A pair
//   whose client BOOTTIME readings lie 30 s or more apart spans two rounds
//   and is skipped. The packet's offset is the mean of its estimates,
//   integer division truncating toward zero at each step, as upstream's
//   trace_processor (v58.2) computes it, so the numbers are the same.
//
// Which offset a timestamp gets
//   Each packet is one point of the boot clock's mapping: host time H (the
//   last host BOOTTIME reading in the packet) against client time H +
//   offset. A client timestamp t uses the last point whose client time is
//   <= t (the first point for t before all of them): t - offset. So a
//   machine whose clock drifts is converted piecewise, each stretch with
//   the offset measured at its start. Conversion happens when a packet is
//   read, with the points read so far, as upstream converts when it
//   tokenizes: a later sync does not move data that came before it in the
//   file.
//
// Before the first sync (the contract says it precedes the machine's data)
// timestamps pass unchanged: upstream then assumes both boot clocks agree.
// A point whose client time goes backwards makes the clock unusable as
// upstream's does (it refuses non-monotonic source clocks): later
// conversions fail, are counted, and the data is dropped.
#ifndef SLUICE_USER_QUERY_IMPORTER_REMOTE_CLOCK_SYNC_H_
#define SLUICE_USER_QUERY_IMPORTER_REMOTE_CLOCK_SYNC_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace sluice {

class RemoteClockSync {
 public:
  // One RemoteClockSync message's bytes. False if it could not be parsed
  // or gave no boot clock offset (nothing changes then).
  bool AddSync(std::string_view remote_clock_sync);

  // `ts` on the machine's boot clock, on the host's boot clock (trace
  // time); nullopt once the clock went backwards (see above).
  std::optional<int64_t> ToHostTime(int64_t ts) const;

  size_t syncs() const { return points_.size(); }
  // The offset (client - host, ns) of the newest sync; 0 before any.
  int64_t last_offset() const { return points_.empty() ? 0 : points_.back().client - points_.back().host; }
  // The half round trip of the newest sync's rounds, widest among them:
  // how far the true offset may lie from the estimate. 0 before any.
  int64_t last_error_bound() const { return last_error_bound_; }
  int64_t max_error_bound() const { return max_error_bound_; }

 private:
  struct Point {
    int64_t client;  // H + offset: the point on the machine's boot clock
    int64_t host;    // H
  };
  std::vector<Point> points_;  // client times non-decreasing while usable
  bool unusable_ = false;
  int64_t last_error_bound_ = 0, max_error_bound_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_REMOTE_CLOCK_SYNC_H_
