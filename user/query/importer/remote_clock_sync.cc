#include "user/query/importer/remote_clock_sync.h"

#include <algorithm>
#include <map>

#include "user/query/importer/proto_wire_reader.h"

namespace sluice {
namespace {

constexpr uint32_t kBoottime = 6;  // BuiltinClock BOOTTIME
// Two entries further apart than this (client BOOTTIME) belong to two rounds.
constexpr uint64_t kSameRoundNs = 30'000'000'000;

// One synced_clocks entry: each clock's readings, 0 where a side did not
// read it (as a missing reading counts in the offset computation).
struct Readings {
  uint64_t host = 0, client = 0;
};
using Entry = std::map<uint32_t, Readings>;

// ClockSnapshot bytes: clocks (1) { clock_id (1), timestamp (2) }. A clock
// listed twice keeps its last reading.
bool ReadSnapshot(std::string_view bytes, bool host, Entry* entry) {
  ProtoWireReader snapshot(bytes);
  WireField f;
  while (snapshot.Next(&f)) {
    if (f.number != 1 || f.type != WireType::kBytes) continue;
    ProtoWireReader clock(f.bytes);
    WireField c;
    uint32_t id = 0;
    uint64_t ts = 0;
    while (clock.Next(&c)) {
      if (c.type != WireType::kVarint) continue;
      if (c.number == 1) id = static_cast<uint32_t>(c.value);
      if (c.number == 2) ts = c.value;
    }
    if (!clock.ok()) return false;
    (host ? (*entry)[id].host : (*entry)[id].client) = ts;
  }
  return snapshot.ok();
}

}  // namespace

bool RemoteClockSync::AddSync(std::string_view remote_clock_sync) {
  std::vector<Entry> entries;
  ProtoWireReader reader(remote_clock_sync);
  WireField f;
  while (reader.Next(&f)) {
    if (f.number != 1 || f.type != WireType::kBytes) continue;  // synced_clocks
    Entry& entry = entries.emplace_back();
    ProtoWireReader synced(f.bytes);
    WireField s;
    while (synced.Next(&s)) {
      if (s.type != WireType::kBytes || (s.number != 2 && s.number != 3)) continue;
      if (!ReadSnapshot(s.bytes, /*host=*/s.number == 3, &entry)) return false;
    }
    if (!synced.ok()) return false;
  }
  if (!reader.ok()) return false;

  // Estimates of the boot clocks' offset from each pair of consecutive
  // entries of one round, and the interval the true offset must lie in.
  int64_t sum = 0, count = 0, error_bound = 0;
  auto boot = [](const Entry& e) {
    auto it = e.find(kBoottime);
    return it == e.end() ? Readings{} : it->second;
  };
  for (size_t i = 1; i < entries.size(); ++i) {
    const Readings first = boot(entries[i - 1]), second = boot(entries[i]);
    // Unsigned, as upstream: a client clock going backwards is "far apart".
    if (second.client - first.client >= kSameRoundNs) continue;
    if (!first.host || !first.client || !second.host || !second.client) continue;
    const auto t1c = static_cast<int64_t>(first.client), t1h = static_cast<int64_t>(first.host);
    const auto t2c = static_cast<int64_t>(second.client), t2h = static_cast<int64_t>(second.host);
    const int64_t client_round = static_cast<int64_t>(first.client + second.client) / 2 - t1h;
    const int64_t host_round = t2c - static_cast<int64_t>(first.host + second.host) / 2;
    sum += client_round + host_round;
    count += 2;
    // The client read t1c before the host read t1h, and t2c after it and
    // before t2h: offset in [max(t1c - t1h, t2c - t2h), t2c - t1h].
    const int64_t low = std::max(t1c - t1h, t2c - t2h), high = t2c - t1h;
    const int64_t estimate = (client_round + host_round) / 2;
    error_bound = std::max({error_bound, estimate - low, high - estimate});
  }
  if (count == 0) return false;
  const int64_t offset = sum / count;
  // The point sits at the last host reading of the boot clock in the packet.
  int64_t host = 0;
  for (const Entry& e : entries)
    if (boot(e).host) host = static_cast<int64_t>(boot(e).host);
  const int64_t client = host + offset;
  // As upstream's clock graph: a host time going backwards (trace time must
  // not) rejects the sync; a client time going backwards makes the machine's
  // boot clock unusable as a source from then on.
  if (!points_.empty() && host < points_.back().host) return false;
  if (!points_.empty() && client < points_.back().client) unusable_ = true;
  points_.push_back({client, host});
  last_error_bound_ = error_bound;
  max_error_bound_ = std::max(max_error_bound_, error_bound);
  return true;
}

std::optional<int64_t> RemoteClockSync::ToHostTime(int64_t ts) const {
  if (unusable_) return std::nullopt;
  if (points_.empty()) return ts;
  auto it = std::upper_bound(points_.begin(), points_.end(), ts,
                             [](int64_t t, const Point& p) { return t < p.client; });
  if (it != points_.begin()) --it;
  return ts + (it->host - it->client);
}

}  // namespace sluice
