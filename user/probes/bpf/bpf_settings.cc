#include "user/probes/bpf/bpf_settings.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "sluice/bpf_config.pb.h"

namespace sluice {
namespace {

constexpr BpfEventName kEventNames[kBpfEventCount] = {
    {"sched", "sched_switch"},       {"sched", "sched_wakeup"},
    {"sched", "sched_waking"},       {"sched", "sched_wakeup_new"},
    {"sched", "sched_process_fork"}, {"sched", "sched_process_exec"},
    {"sched", "sched_process_exit"}, {"task", "task_rename"},
    {"task", "task_newtask"},        {"ftrace", "print"},
};

uint64_t RoundUpPow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

uint64_t LoadLe64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

}  // namespace

BpfEventName BpfEventNameOf(BpfEvent event) {
  return kEventNames[static_cast<size_t>(event)];
}

std::optional<BpfEvent> BpfEventFromName(std::string_view full_name) {
  for (size_t i = 0; i < kBpfEventCount; i++) {
    const BpfEventName& n = kEventNames[i];
    if (full_name.size() == n.group.size() + 1 + n.name.size() &&
        full_name.substr(0, n.group.size()) == n.group &&
        full_name[n.group.size()] == '/' &&
        full_name.substr(n.group.size() + 1) == n.name) {
      return static_cast<BpfEvent>(i);
    }
  }
  return std::nullopt;
}

bool BpfCommPrefix::Matches(const char comm[16]) const {
  return ((LoadLe64(comm) ^ word[0]) & mask[0]) == 0 &&
         ((LoadLe64(comm + 8) ^ word[1]) & mask[1]) == 0;
}

bool BpfSettings::has(BpfEvent e) const {
  return std::find(events.begin(), events.end(), e) != events.end();
}

// ---- FromConfig's steps, in its order: each fills its part of `s` or
// says what is wrong with the config. ----
namespace {

// Events by full name or by group ("sched/*"); names this source does not
// have are kept in unknown_events (the caller warns and skips them).
Status SetEvents(const protos::BpfConfig& config, BpfSettings* s) {
  bool wanted[kBpfEventCount] = {};
  for (const std::string& name : config.events()) {
    bool matched = false;
    if (name.size() > 2 && name.compare(name.size() - 2, 2, "/*") == 0) {
      std::string_view group(name.data(), name.size() - 2);
      for (size_t i = 0; i < kBpfEventCount; i++) {
        if (kEventNames[i].group == group) wanted[i] = matched = true;
      }
    } else if (auto e = BpfEventFromName(name)) {
      wanted[static_cast<size_t>(*e)] = matched = true;
    }
    if (!matched) s->unknown_events.push_back(name);
  }
  for (size_t i = 0; i < kBpfEventCount; i++) {
    if (wanted[i]) s->events.push_back(static_cast<BpfEvent>(i));
  }
  if (s->events.empty()) {
    return Status::Error(
        "linux.bpf: bpf_config.events names no event this source has: list some of "
        "sched/sched_switch, sched/sched_waking, ..., task/task_rename, ftrace/print "
        "(see docs/BPF.md)");
  }
  return Status::Ok();
}

Status SetTaskIds(const protos::BpfConfig& config, BpfSettings* s) {
  for (int32_t pid : config.pids()) {
    if (pid <= 0) return Status::Error("linux.bpf: bpf_config.pids has " + std::to_string(pid) + ": pids are > 0");
    s->pids.push_back(static_cast<uint32_t>(pid));
  }
  for (int32_t tgid : config.tgids()) {
    if (tgid <= 0) return Status::Error("linux.bpf: bpf_config.tgids has " + std::to_string(tgid) + ": tgids are > 0");
    s->tgids.push_back(static_cast<uint32_t>(tgid));
  }
  return Status::Ok();
}

// Each prefix as the two little-endian words of comm the program compares,
// and the mask of the bytes that must match.
Status SetCommPrefixes(const protos::BpfConfig& config, BpfSettings* s) {
  if (static_cast<uint32_t>(config.comm_prefixes_size()) > BpfSettings::kMaxCommPrefixes) {
    return Status::Error("linux.bpf: bpf_config.comm_prefixes has " +
                         std::to_string(config.comm_prefixes_size()) +
                         " entries: at most " + std::to_string(BpfSettings::kMaxCommPrefixes));
  }
  for (const std::string& text : config.comm_prefixes()) {
    // comm holds at most 15 characters and a NUL.
    if (text.empty() || text.size() > 15 || text.find('\0') != std::string::npos) {
      return Status::Error("linux.bpf: bpf_config.comm_prefixes entry '" + text +
                           "' must be 1 to 15 bytes (a task comm is at most 15)");
    }
    BpfCommPrefix p;
    p.text = text;
    char bytes[16] = {};
    char mask[16] = {};
    memcpy(bytes, text.data(), text.size());
    memset(mask, 0xff, text.size());
    p.word[0] = LoadLe64(bytes);
    p.word[1] = LoadLe64(bytes + 8);
    p.mask[0] = LoadLe64(mask);
    p.mask[1] = LoadLe64(mask + 8);
    s->comm_prefixes.push_back(p);
  }
  return Status::Ok();
}

void SetRateCeiling(const protos::BpfConfig& config, BpfSettings* s) {
  if (config.per_cpu_rate_limit() > 0) {
    s->rate_cost_ns = std::max<uint64_t>(1, 1'000'000'000ull / config.per_cpu_rate_limit());
    s->rate_burst_ns = std::max<uint64_t>(s->rate_cost_ns, BpfSettings::kRateBurstNs);
  }
}

Status SetRingBytes(const protos::BpfConfig& config, uint32_t num_cpus, bool shared_ring,
                    BpfSettings* s) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t ring_kb = config.ringbuf_size_kb() ? config.ringbuf_size_kb() : BpfSettings::kDefaultRingKb;
  if (ring_kb > BpfSettings::kMaxRingKb) {
    return Status::Error("linux.bpf: bpf_config.ringbuf_size_kb " + std::to_string(ring_kb) +
                         " is over the limit of " + std::to_string(BpfSettings::kMaxRingKb) +
                         " KiB per ring");
  }
  uint64_t ring = RoundUpPow2(std::max<uint64_t>(ring_kb * 1024, page));
  if (shared_ring) ring = RoundUpPow2(ring * std::max<uint32_t>(1, num_cpus));
  if (ring > (1ull << 31)) ring = 1ull << 31;
  s->ring_bytes = static_cast<uint32_t>(ring);
  return Status::Ok();
}

// After SetRingBytes: the payload is bounded by the ring's size.
void SetMarkerPayloadBytes(const protos::BpfConfig& config, BpfSettings* s) {
  uint64_t payload = config.marker_payload_bytes() ? config.marker_payload_bytes()
                                                   : BpfSettings::kDefaultMarkerPayloadBytes;
  payload = std::min<uint64_t>((payload + 7) & ~7ull, BpfSettings::kMaxMarkerPayloadBytes);
  // Keep room for at least four of the largest records in a ring.
  payload = std::min<uint64_t>(payload, s->ring_bytes / 4 - 64);
  s->marker_payload_bytes = static_cast<uint32_t>(payload);
}

}  // namespace

StatusOr<BpfSettings> BpfSettings::FromConfig(const protos::BpfConfig& config,
                                              uint32_t num_cpus, bool shared_ring) {
  BpfSettings s;
  SLUICE_RETURN_IF_ERROR(SetEvents(config, &s));
  SLUICE_RETURN_IF_ERROR(SetTaskIds(config, &s));
  SLUICE_RETURN_IF_ERROR(SetCommPrefixes(config, &s));
  SetRateCeiling(config, &s);
  SLUICE_RETURN_IF_ERROR(SetRingBytes(config, num_cpus, shared_ring, &s));
  SetMarkerPayloadBytes(config, &s);
  return s;
}

}  // namespace sluice
