// `sluice doctor`: what this machine supports for tracing, one line per
// check, with the fix for whatever fails.
//
//   sluice doctor [--tracefs PATH] [--kconfig PATH] [--kconfigs-dir DIR]
//
//   PASS  tracefs        mounted at /sys/kernel/tracing, writable
//   FAIL  btf            no /sys/kernel/btf/vmlinux -- fix: kernel needs CONFIG_DEBUG_INFO_BTF=y
//   ...
//   features:
//     ftrace: ok
//     bpf: FAIL (btf)
//   default recording: ready
//
// Checks, each tagged with the feature of kconfigs/ it belongs to:
//   base     kernel release; permissions (root, CapEff: CAP_SYS_ADMIN,
//            CAP_BPF, CAP_PERFMON)
//   ftrace   tracefs found and writable; trace_clock offers "boot";
//            buffer_subbuf_size_kb (6.7+)
//   events   every event of DefaultRecordEvents() has a format
//   bpf      /sys/kernel/btf/vmlinux parses; a BPF ringbuf map can be created;
//            tracepoint, raw tracepoint and tp_btf programs load and attach
//   kprobes  kprobe_events / the kprobe PMU; fentry on tracing_mark_write
//            (optional feature: the BPF source falls back to a tracepoint)
//   kconfig  per fragment of kconfigs/, the options the running kernel's
//            config (/proc/config.gz, /boot/config-<release>) lacks
//
// States: PASS works; WARN works in part, or an optional feature does not;
// FAIL does not work; SKIP could not be checked (with why). Exit status 0
// when no check needed by a default `sluice record` (ftrace source, default
// events: the *needed* checks below) FAILs, else 1; 2 on usage errors.
//
// The doctor changes nothing on the machine. It reads tracefs, never writes
// it. If tracefs is not mounted and we are root, it mounts tracefs in a
// private mount namespace of its own (unshare(CLONE_NEWNS), propagation
// private), which disappears when the process exits, to tell "mountable"
// from "missing" and to check events; nothing is mounted where anyone else
// can see it. The BPF probes create and close trivial programs and maps
// (user/cmd/doctor_bpf_probes.h).
#ifndef SLUICE_USER_CMD_DOCTOR_COMMAND_H_
#define SLUICE_USER_CMD_DOCTOR_COMMAND_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shm/base/status.h"
#include "user/cmd/doctor_kconfig.h"

namespace sluice {

enum class DoctorState { kPass, kWarn, kFail, kSkip };

struct DoctorCheck {
  DoctorState state = DoctorState::kSkip;
  std::string feature;  // "base", "ftrace", "events", "bpf", "kprobes", fragment name.
  std::string name;     // "tracefs", "btf", "kconfig bpf", ...
  std::string detail;
  std::string fix;  // For FAIL and WARN; empty if there is nothing to do.
  // A FAIL here means a default `sluice record` cannot work (exit status 1).
  bool needed = false;
  // The feature is optional (kprobes, vm): its problems are WARN, not FAIL.
  bool optional = false;
  // Extra lines under the check (kconfig: one per unmet option, with reason).
  std::vector<std::string> notes;
};

struct DoctorOptions {
  std::string tracefs_root;  // --tracefs: use this tracefs; empty = find it.
  std::string kconfig_path;  // --kconfig: empty = the running kernel's.
  std::string kconfigs_dir;  // --kconfigs-dir: empty = FindKconfigsDir().
  // Mount tracefs in a private mount namespace when it is not mounted
  // (irreversibly moves this process to a new mount namespace).
  bool allow_private_mount = true;
  bool probe_bpf = true;  // Tests against fake trees turn the BPF probes off.
  std::string proc_status_path = "/proc/self/status";
  std::string btf_path = "/sys/kernel/btf/vmlinux";
};

// Runs every check, in report order.
std::vector<DoctorCheck> RunDoctorChecks(const DoctorOptions& options);

// --- Pieces, exposed for tests. ---

// CapEff of /proc/<pid>/status text, as a bit mask. Error if absent.
StatusOr<uint64_t> ParseCapEff(std::string_view proc_status);
DoctorCheck PermissionsCheck(uid_t euid, uint64_t cap_eff);

// One check per fragment (with `notes` per unmet option), or one SKIP when
// `config_path` is empty (no kernel config readable).
std::vector<DoctorCheck> KconfigChecks(const std::vector<KconfigFragment>& fragments,
                                       const KernelConfig& config, const std::string& config_path);

// Checks the default record events against events/ of the tracefs at `root`.
DoctorCheck DefaultEventsCheck(const std::string& root);

// The report text: one line per check, then one line per feature and the
// verdict on the default recording.
std::string FormatDoctorReport(const std::vector<DoctorCheck>& checks);
int DoctorExitCode(const std::vector<DoctorCheck>& checks);

int RunDoctorCommand(int argc, char** argv);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_DOCTOR_COMMAND_H_
