// BpfSettings: a linux.bpf data source config (sluice.protos.BpfConfig),
// checked and turned into the values the loader writes into the BPF
// programs' settings (rodata) and maps. No kernel access here: everything is
// testable as a plain function (tests/user/probes/bpf/bpf_settings_test.cc).
//
// Events are named like FtraceConfig.ftrace_events: "sched/sched_switch",
// "task/task_rename", "ftrace/print" (trace_marker writes), or a whole group
// "sched/*". Names the source does not have are reported (warnings) and
// skipped, like Perfetto does for unknown ftrace events; a config that leaves
// no event at all is an error.
//
// Filters (all in-kernel, see bpf/sluice_common.bpf.h): an event passes if
// no filter is set, or if its task matches any listed pid, tgid or comm
// prefix (a union). The rate ceiling applies on top, per CPU.
#ifndef SLUICE_USER_PROBES_BPF_BPF_SETTINGS_H_
#define SLUICE_USER_PROBES_BPF_BPF_SETTINGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shm/base/status.h"

namespace sluice {
namespace protos {
class BpfConfig;
}  // namespace protos

enum class BpfEvent : uint8_t {
  kSchedSwitch,
  kSchedWakeup,
  kSchedWaking,
  kSchedWakeupNew,
  kSchedProcessFork,
  kSchedProcessExec,
  kSchedProcessExit,
  kTaskRename,
  kTaskNewtask,
  kPrint,  // trace_marker writes
  kCount,
};
inline constexpr size_t kBpfEventCount = static_cast<size_t>(BpfEvent::kCount);

struct BpfEventName {
  std::string_view group;
  std::string_view name;
};
BpfEventName BpfEventNameOf(BpfEvent event);
// "group/name" -> event; nullopt if the source does not have it.
std::optional<BpfEvent> BpfEventFromName(std::string_view full_name);

// A comm prefix as the programs compare it: comm (16 bytes, as two
// little-endian words) matches if (comm ^ word) & mask == 0 for both words.
struct BpfCommPrefix {
  std::string text;
  uint64_t word[2] = {0, 0};
  uint64_t mask[2] = {0, 0};
  // The same test in user space (tests, and the decoder's self-check).
  bool Matches(const char comm[16]) const;
};

struct BpfSettings {
  static constexpr uint32_t kDefaultRingKb = 1024;
  static constexpr uint32_t kDefaultMarkerPayloadBytes = 1024;
  static constexpr uint32_t kMaxMarkerPayloadBytes = 16384;  // SLUICE_MAX_MARKER_PAYLOAD
  static constexpr uint32_t kMaxCommPrefixes = 8;            // SLUICE_MAX_COMM_PREFIXES
  static constexpr uint32_t kMaxRingKb = 1u << 20;           // 1 GiB per ring
  // Burst of the rate ceiling: this much time's worth of events.
  static constexpr uint64_t kRateBurstNs = 100'000'000;

  // Enabled events, each once, in BpfEvent order.
  std::vector<BpfEvent> events;
  // Requested names the source does not have (each reported once).
  std::vector<std::string> unknown_events;

  std::vector<uint32_t> pids;
  std::vector<uint32_t> tgids;
  std::vector<BpfCommPrefix> comm_prefixes;

  // Token bucket of the per-CPU rate ceiling; cost 0 = unlimited.
  uint64_t rate_cost_ns = 0;
  uint64_t rate_burst_ns = 0;

  // Bytes of one ring: a power of two >= the page size. In shared-ring mode
  // the one ring is num_cpus times the per-CPU size (rounded up likewise).
  uint32_t ring_bytes = 0;
  // Payload capacity of a marker record: a multiple of 8 in
  // [8, kMaxMarkerPayloadBytes].
  uint32_t marker_payload_bytes = 0;

  bool has(BpfEvent e) const;

  // Errors are one line naming the offending field.
  static StatusOr<BpfSettings> FromConfig(const protos::BpfConfig& config,
                                          uint32_t num_cpus, bool shared_ring);
};

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_BPF_BPF_SETTINGS_H_
