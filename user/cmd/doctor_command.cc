#include "user/cmd/doctor_command.h"

#include <bpf/btf.h>
#include <errno.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "user/cmd/doctor_bpf_probes.h"
#include "user/cmd/record_config.h"
#include "user/probes/tracefs.h"
#include "user/probes/tracefs_readers.h"
#include "shm/base/command_line.h"
#include "shm/base/file_util.h"

namespace sluice {
namespace {

constexpr int kCapSysAdmin = 21;
constexpr int kCapDacOverride = 1;
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;
constexpr char kMountFix[] = "mount -t tracefs nodev /sys/kernel/tracing";
constexpr char kPrivFix[] = "run as root or grant CAP_BPF,CAP_PERFMON";

// Events without which a default recording is pointless; the others are
// skipped with a warning by the ftrace settings when missing.
const std::set<std::string>& CoreEvents() {
  static const std::set<std::string> events = {"sched/sched_switch", "ftrace/print"};
  return events;
}

bool HasCap(uint64_t caps, int cap) { return (caps >> cap) & 1; }

const char* StateName(DoctorState s) {
  switch (s) {
    case DoctorState::kPass: return "PASS";
    case DoctorState::kWarn: return "WARN";
    case DoctorState::kFail: return "FAIL";
    case DoctorState::kSkip: return "SKIP";
  }
  return "?";
}

DoctorCheck Check(DoctorState state, std::string feature, std::string name, std::string detail,
                  std::string fix = {}, bool needed = false) {
  DoctorCheck c;
  c.state = state;
  c.feature = std::move(feature);
  c.name = std::move(name);
  c.detail = std::move(detail);
  c.fix = std::move(fix);
  c.needed = needed;
  c.optional = c.feature == "kprobes";
  return c;
}

// Mount points of tracefs in this mount namespace, from /proc/self/mountinfo
// (field 5 is the mount point; the fstype follows the " - " separator).
// Reading mountinfo triggers no automount, unlike looking into debugfs.
std::vector<std::string> TracefsMounts() {
  std::vector<std::string> mounts;
  StatusOr<std::string> text = ReadFile("/proc/self/mountinfo");
  if (!text.ok()) return mounts;
  std::string_view rest = text.value();
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    size_t dash = line.find(" - ");
    if (dash == std::string_view::npos || line.substr(dash + 3, 8) != "tracefs ") continue;
    std::string_view f = line;
    for (int i = 0; i < 4; i++) {
      size_t sp = f.find(' ');
      if (sp == std::string_view::npos) break;
      f.remove_prefix(sp + 1);
    }
    std::string point(f.substr(0, f.find(' ')));
    if (point.find('\\') == std::string::npos) mounts.push_back(point);  // No octal escapes.
  }
  std::stable_partition(mounts.begin(), mounts.end(),
                        [](const std::string& m) { return m == Tracefs::kDefaultRoot; });
  return mounts;
}

bool KernelHasTracefs() {
  StatusOr<std::string> fs = ReadFile("/proc/filesystems");
  return fs.ok() && fs.value().find("\ttracefs\n") != std::string::npos;
}

// Finds tracefs (see the header on the private mount). Sets *root to a
// tracefs that can at least be looked at, or leaves it empty.
DoctorCheck TracefsCheck(const DoctorOptions& options, std::string* root) {
  const std::string feature = "ftrace";
  auto open_at = [&](const std::string& path, const std::string& how) -> DoctorCheck {
    TracefsOptions to;
    to.root = path;
    to.allow_mount = false;
    to.create_instance = false;
    StatusOr<std::unique_ptr<Tracefs>> fs = Tracefs::Open(to);
    if (fs.ok()) {
      *root = path;
      return Check(DoctorState::kPass, feature, "tracefs", how + " at " + path + ", writable", "",
                   true);
    }
    if (PathExists(path + "/tracing_on")) {
      *root = path;
      return Check(DoctorState::kFail, feature, "tracefs", how + " at " + path + " but not writable",
                   "run sluice as root", true);
    }
    if (how == "mounted" && access(path.c_str(), X_OK) != 0) {
      return Check(DoctorState::kFail, feature, "tracefs",
                   how + " at " + path + " but not accessible (" + std::strerror(errno) + ")",
                   "run sluice as root", true);
    }
    return Check(DoctorState::kFail, feature, "tracefs", fs.status().message(),
                 "point --tracefs at a mounted tracefs", true);
  };
  if (!options.tracefs_root.empty()) return open_at(options.tracefs_root, "given");
  std::vector<std::string> mounts = TracefsMounts();
  if (!mounts.empty()) return open_at(mounts.front(), "mounted");

  if (!KernelHasTracefs()) {
    return Check(DoctorState::kFail, feature, "tracefs",
                 "not mounted, and the kernel has no tracefs (/proc/filesystems)",
                 "kernel needs CONFIG_FTRACE=y and CONFIG_TRACING=y (kconfigs/ftrace.config)", true);
  }
  if (geteuid() != 0) {
    return Check(DoctorState::kFail, feature, "tracefs",
                 "not mounted (the kernel has tracefs); mounting needs root",
                 std::string("as root: ") + kMountFix, true);
  }
  if (!options.allow_private_mount) {
    return Check(DoctorState::kWarn, feature, "tracefs",
                 "not mounted; the kernel has tracefs and sluice record mounts it as root",
                 kMountFix, true);
  }
  // A mount namespace of our own, private so that nothing propagates out.
  if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Check(DoctorState::kWarn, feature, "tracefs",
                 std::string("not mounted; the kernel has tracefs (not test-mounted: unshare: ") +
                     std::strerror(errno) + ")",
                 kMountFix, true);
  }
  TracefsOptions to;
  to.create_instance = false;
  StatusOr<std::unique_ptr<Tracefs>> fs = Tracefs::Open(to);
  if (!fs.ok()) {
    return Check(DoctorState::kFail, feature, "tracefs",
                 "not mounted, and mounting it failed: " + fs.status().message(), kMountFix, true);
  }
  *root = fs.value()->root();
  return Check(DoctorState::kWarn, feature, "tracefs",
               "not mounted; mountable (mounted at " + *root +
                   " in a private mount namespace only); sluice record mounts it as root",
               kMountFix, true);
}

DoctorCheck TraceClockCheck(const std::string& root) {
  StatusOr<std::string> text = ReadFile(root + "/trace_clock");
  if (!text.ok()) return Check(DoctorState::kSkip, "ftrace", "trace_clock", text.status().message());
  std::vector<std::string> clocks = ParseTraceClocks(text.value());
  if (std::find(clocks.begin(), clocks.end(), "boot") != clocks.end()) {
    return Check(DoctorState::kPass, "ftrace", "trace_clock",
                 "\"boot\" offered (selected: " + ParseSelectedTraceClock(text.value()) + ")");
  }
  return Check(DoctorState::kWarn, "ftrace", "trace_clock",
               "no \"boot\" clock (" + Join(clocks, " ") +
                   "): timestamps will not line up with other boot-clock data sources",
               "kernel 4.10+ offers the boot clock");
}

// Another tracer reading a buffer: sluice records beside it from an
// instance of its own, or refuses (ftrace_buffer_choice.h).
DoctorCheck OtherTracersCheck(const std::string& root) {
  const std::vector<TracefsReader> readers = FindTracefsReaders(getpid());
  if (readers.empty()) return Check(DoctorState::kPass, "ftrace", "other tracers", "no other process reads a buffer");
  std::string detail;
  for (const TracefsReader& r : readers) {
    detail += (detail.empty() ? "" : "; ") + DescribeTracefsReaders({r}) + " reads " +
              (r.instance.empty() ? "the top-level buffer" : "instance " + r.instance);
  }
  const bool top_level = !ReadersOfInstance(readers, "").empty();
  const bool copies = PathExists(root + "/options/copy_trace_marker");
  if (!top_level) return Check(DoctorState::kPass, "ftrace", "other tracers", detail + " (not sluice's buffer)");
  return Check(DoctorState::kWarn, "ftrace", "other tracers",
               detail + ": sluice records from an instance of its own beside it" +
                   (copies ? ", trace_marker writes copied in (copy_trace_marker)"
                           : "; a trace with ftrace/print or atrace is refused (no copy_trace_marker before 6.17)"),
               "stop the other tracer to record from the top-level buffer");
}

DoctorCheck SubBufferCheck(const std::string& root) {
  StatusOr<std::string> text = ReadFile(root + "/buffer_subbuf_size_kb");
  if (text.ok()) {
    return Check(DoctorState::kPass, "ftrace", "buffer_subbuf_size_kb",
                 std::string(TrimWhitespace(text.value())) + " KiB sub-buffers, settable (6.7+)");
  }
  if (!PathExists(root + "/buffer_subbuf_size_kb")) {
    return Check(DoctorState::kWarn, "ftrace", "buffer_subbuf_size_kb",
                 "absent (before 6.7): sub-buffers are one page, larger events are dropped",
                 "kernel 6.7+ for larger sub-buffers");
  }
  return Check(DoctorState::kSkip, "ftrace", "buffer_subbuf_size_kb", text.status().message());
}

DoctorCheck KprobesCheck(const std::string& root, const KernelConfig& config, bool have_config) {
  std::vector<std::string> seen;
  if (!root.empty() && PathExists(root + "/kprobe_events")) seen.push_back(root + "/kprobe_events");
  if (PathExists("/sys/bus/event_source/devices/kprobe/type")) seen.push_back("the kprobe PMU");
  if (!seen.empty()) return Check(DoctorState::kPass, "kprobes", "kprobes", Join(seen, " and "));
  std::string detail = "no " + (root.empty() ? std::string("kprobe_events") : root + "/kprobe_events") +
                       ", no kprobe PMU";
  if (have_config) {
    auto it = config.find("CONFIG_KPROBES");
    detail += it == config.end() ? ", CONFIG_KPROBES not set" : ", CONFIG_KPROBES=" + it->second;
  }
  return Check(DoctorState::kWarn, "kprobes", "kprobes", detail + " (optional)",
               "kernel needs CONFIG_KPROBES=y and CONFIG_KPROBE_EVENTS=y");
}

std::string ConfigValue(const KernelConfig& config, const char* name) {
  auto it = config.find(name);
  return std::string(name + 7) + "=" + (it == config.end() ? "n" : it->second);
}

DoctorCheck BpfProbeCheck(const char* feature, const char* name, const BpfProbeResult& r,
                          const std::string& what, const std::string& kernel_fix) {
  if (r.ok) return Check(DoctorState::kPass, feature, name, what + ": loaded and attached");
  const bool optional = std::string_view(feature) == "kprobes";
  const DoctorState bad = optional ? DoctorState::kWarn : DoctorState::kFail;
  if (r.error == EPERM || r.error == EACCES) {
    return Check(bad, feature, name, what + ": " + r.detail,
                 geteuid() == 0 ? "refused even as root: a security policy or the hypervisor "
                                  "forbids it"
                                : kPrivFix);
  }
  return Check(bad, feature, name, what + ": " + r.detail, kernel_fix);
}

void BpfChecks(const DoctorOptions& options, const std::string& root, const KernelConfig& config,
               bool have_config, std::vector<DoctorCheck>* out) {
  ScopedQuietLibbpf quiet;
  struct btf* vmlinux = btf__parse_raw(options.btf_path.c_str());
  const int btf_err = errno;
  if (vmlinux != nullptr) {
    out->push_back(Check(DoctorState::kPass, "bpf", "btf",
                         options.btf_path + ": " + std::to_string(btf__type_cnt(vmlinux)) + " types"));
  } else {
    out->push_back(Check(DoctorState::kFail, "bpf", "btf",
                         options.btf_path + ": " + std::strerror(btf_err) +
                             " (CO-RE programs cannot be relocated)",
                         "kernel needs CONFIG_DEBUG_INFO_BTF=y"));
  }
  BpfProbeResult rb = ProbeBpfRingbuf();
  if (rb.ok) {
    out->push_back(Check(DoctorState::kPass, "bpf", "ringbuf", "BPF_MAP_TYPE_RINGBUF map created"));
  } else {
    out->push_back(BpfProbeCheck("bpf", "ringbuf", rb, "BPF ringbuf",
                                 rb.error == ENOSYS ? "kernel needs CONFIG_BPF_SYSCALL=y"
                                                    : "BPF ringbuf needs Linux 5.8+"));
  }
  if (root.empty()) {
    out->push_back(Check(DoctorState::kSkip, "bpf", "bpf tracepoint", "no tracefs to find the id in"));
  } else {
    out->push_back(BpfProbeCheck("bpf", "bpf tracepoint",
                                 ProbeTracepointProgram(root + "/events/sched/sched_switch/id"),
                                 "tracepoint program on sched/sched_switch",
                                 "kernel needs CONFIG_BPF_EVENTS=y and CONFIG_PERF_EVENTS=y"));
  }
  out->push_back(BpfProbeCheck("bpf", "raw_tracepoint", ProbeRawTracepoint("sched_switch"),
                               "raw tracepoint on sched_switch", "raw tracepoints need Linux 4.17+"));
  out->push_back(BpfProbeCheck("bpf", "tp_btf", ProbeTpBtf(vmlinux, "sched_switch"),
                               "tp_btf on sched_switch",
                               "tp_btf needs Linux 5.5+ with CONFIG_DEBUG_INFO_BTF=y"));

  // fentry: the attach says it all; the config says why where it fails.
  // On vfs_write, where the BPF source's trace_marker program attaches
  // (kernel/trace is built without ftrace hooks: tracing_mark_write never
  // takes fentry; docs/BPF.md).
  BpfProbeResult fe = ProbeFentry(vmlinux, "vfs_write");
  DoctorCheck fentry = BpfProbeCheck(
      "kprobes", "fentry", fe, "fentry on vfs_write",
      "kernel needs CONFIG_BPF_JIT=y, CONFIG_FUNCTION_TRACER=y, "
      "CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS=y");
  if (!fe.ok) {
    if (have_config) {
      fentry.detail += "; config has " + ConfigValue(config, "CONFIG_BPF_JIT") + " " +
                       ConfigValue(config, "CONFIG_FUNCTION_TRACER") + " " +
                       ConfigValue(config, "CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS");
    }
    fentry.detail += "; the BPF source uses the syscalls/sys_enter_write tracepoint instead";
  }
  out->push_back(std::move(fentry));
  btf__free(vmlinux);
}

// --- Report. ---

struct FeatureSummary {
  bool optional = false;
  std::vector<std::string> failed, warned;
  size_t checked = 0;
};

}  // namespace

StatusOr<uint64_t> ParseCapEff(std::string_view proc_status) {
  size_t pos = proc_status.find("CapEff:");
  if (pos == std::string_view::npos) return Status::Error("no CapEff line in /proc/self/status");
  std::string_view v = TrimWhitespace(proc_status.substr(pos + 7, proc_status.find('\n', pos) - pos - 7));
  if (v.empty() || v.size() > 16) return Status::Error("malformed CapEff in /proc/self/status");
  uint64_t caps = 0;
  for (char c : v) {
    int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (d < 0) return Status::Error("malformed CapEff in /proc/self/status");
    caps = caps << 4 | static_cast<uint64_t>(d);
  }
  return caps;
}

DoctorCheck PermissionsCheck(uid_t euid, uint64_t cap_eff) {
  std::vector<std::string> have;
  if (HasCap(cap_eff, kCapSysAdmin)) have.push_back("CAP_SYS_ADMIN");
  if (HasCap(cap_eff, kCapBpf)) have.push_back("CAP_BPF");
  if (HasCap(cap_eff, kCapPerfmon)) have.push_back("CAP_PERFMON");
  char hex[32];
  snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(cap_eff));
  std::string who = euid == 0 ? "root" : "uid " + std::to_string(euid);
  std::string detail = who + ", CapEff " + hex + " (" + (have.empty() ? "none of CAP_SYS_ADMIN CAP_BPF CAP_PERFMON" : Join(have, " ")) + ")";
  const bool bpf_ok = HasCap(cap_eff, kCapSysAdmin) || (HasCap(cap_eff, kCapBpf) && HasCap(cap_eff, kCapPerfmon));
  const bool tracefs_ok = euid == 0 || HasCap(cap_eff, kCapDacOverride);
  if (bpf_ok && tracefs_ok) return Check(DoctorState::kPass, "base", "permissions", detail);
  if (bpf_ok) {
    return Check(DoctorState::kWarn, "base", "permissions",
                 detail + ": BPF allowed, tracefs writes need root",
                 "run as root (or mount tracefs with gid= and add this user to that group)");
  }
  return Check(tracefs_ok ? DoctorState::kWarn : DoctorState::kFail, "base", "permissions",
               detail + ": BPF programs will be refused", kPrivFix);
}

std::vector<DoctorCheck> KconfigChecks(const std::vector<KconfigFragment>& fragments,
                                       const KernelConfig& config, const std::string& config_path) {
  std::vector<DoctorCheck> out;
  if (config_path.empty()) {
    out.push_back(Check(DoctorState::kSkip, "base", "kconfig",
                        "no kernel config readable (/proc/config.gz needs CONFIG_IKCONFIG_PROC, "
                        "or /boot/config-<release>): pass --kconfig PATH"));
    return out;
  }
  static const std::set<std::string> kDefaultFeatures = {"base", "ftrace", "events"};
  for (const KconfigFragment& f : fragments) {
    KconfigFeatureReport r = CheckKconfigFragment(f, config);
    DoctorCheck c;
    c.feature = f.feature;
    c.name = "kconfig " + f.feature;
    c.needed = kDefaultFeatures.count(f.feature) > 0;
    c.optional = f.optional;
    std::vector<std::string> fix;
    auto list = [&](const std::vector<KconfigUnmet>& unmet, const char* kind) {
      std::vector<std::string> names;
      for (const KconfigUnmet& u : unmet) {
        names.push_back(u.option->name);
        fix.push_back(u.option->name + "=" + u.option->value);
        c.notes.push_back(std::string(kind) + " " + u.option->name + "=" + u.option->value +
                          " (is: " + u.actual + ") -- " + u.option->reason);
      }
      return Join(names, " ");
    };
    std::string missing = list(r.missing, "missing");
    std::string wanted = list(r.wanted, "wanted ");
    std::string tag = f.optional ? " (optional feature)" : "";
    if (!r.missing.empty()) {
      c.state = f.optional ? DoctorState::kWarn : DoctorState::kFail;
      c.detail = "missing " + missing + (wanted.empty() ? "" : "; wanted " + wanted) + tag;
    } else if (!r.wanted.empty()) {
      c.state = DoctorState::kWarn;
      c.detail = "required options set; recommended not set: " + wanted + tag;
    } else {
      c.state = DoctorState::kPass;
      c.detail = "all " + std::to_string(r.option_count) + " options set" + tag;
    }
    if (!fix.empty()) {
      c.fix = std::string(r.missing.empty() ? "kernel wants " : "kernel needs ") + Join(fix, " ") +
              " (kconfigs/" + f.feature + ".config)";
    }
    out.push_back(std::move(c));
  }
  return out;
}

DoctorCheck DefaultEventsCheck(const std::string& root) {
  std::vector<std::string> missing, unreadable, core_missing;
  const std::vector<std::string>& events = DefaultRecordEvents();
  for (const std::string& e : events) {
    const std::string format = root + "/events/" + e + "/format";
    if (access(format.c_str(), R_OK) == 0) continue;
    if (errno == EACCES) {
      unreadable.push_back(e);
    } else {
      missing.push_back(e);
      if (CoreEvents().count(e)) core_missing.push_back(e);
    }
  }
  const std::string n = std::to_string(events.size());
  if (!unreadable.empty()) {
    return Check(DoctorState::kFail, "events", "events",
                 "formats not readable: " + Join(unreadable, " "), "run sluice as root", true);
  }
  if (!core_missing.empty()) {
    return Check(DoctorState::kFail, "events", "events",
                 "missing " + Join(missing, " ") + " of the " + n + " default events",
                 "kernel needs CONFIG_TRACEPOINTS=y and CONFIG_EVENT_TRACING=y", true);
  }
  if (!missing.empty()) {
    return Check(DoctorState::kWarn, "events", "events",
                 "missing " + Join(missing, " ") + " of the " + n +
                     " default events (sluice record skips them)",
                 "a kernel with those subsystems (e.g. CONFIG_CPU_FREQ for power/cpu_frequency)",
                 true);
  }
  return Check(DoctorState::kPass, "events", "events", "all " + n + " default events have a format",
               "", true);
}

std::vector<DoctorCheck> RunDoctorChecks(const DoctorOptions& options) {
  std::vector<DoctorCheck> out;
  utsname u;
  std::string release;
  if (uname(&u) == 0) {
    release = u.release;
    out.push_back(Check(DoctorState::kPass, "base", "kernel",
                        std::string("Linux ") + u.release + " " + u.machine));
  } else {
    out.push_back(Check(DoctorState::kSkip, "base", "kernel", std::strerror(errno)));
  }
  StatusOr<std::string> status = ReadFile(options.proc_status_path);
  StatusOr<uint64_t> caps = status.ok() ? ParseCapEff(status.value()) : StatusOr<uint64_t>(status.status());
  if (caps.ok()) {
    out.push_back(PermissionsCheck(geteuid(), caps.value()));
  } else {
    out.push_back(Check(DoctorState::kSkip, "base", "permissions", caps.status().message()));
  }

  // The kernel config first: the BPF and kprobes checks quote it.
  std::string config_path = options.kconfig_path.empty() ? FindRunningKernelConfig(release)
                                                         : options.kconfig_path;
  KernelConfig config;
  bool have_config = false;
  DoctorCheck config_error;
  if (!config_path.empty()) {
    StatusOr<std::string> text = ReadMaybeGzipFile(config_path);
    if (text.ok()) {
      config = ParseKernelConfig(text.value());
      have_config = true;
    } else {
      config_error = Check(DoctorState::kSkip, "base", "kconfig", text.status().message());
    }
  }

  std::string root;
  out.push_back(TracefsCheck(options, &root));
  if (root.empty()) {
    for (const char* name : {"trace_clock", "buffer_subbuf_size_kb", "other tracers"}) {
      out.push_back(Check(DoctorState::kSkip, "ftrace", name, "no tracefs"));
    }
    out.push_back(Check(DoctorState::kSkip, "events", "events", "no tracefs"));
  } else {
    out.push_back(TraceClockCheck(root));
    out.push_back(SubBufferCheck(root));
    if (options.tracefs_root.empty()) out.push_back(OtherTracersCheck(root));
    out.push_back(DefaultEventsCheck(root));
  }
  if (options.probe_bpf) BpfChecks(options, root, config, have_config, &out);
  out.push_back(KprobesCheck(root, config, have_config));

  if (!config_error.name.empty()) {
    out.push_back(std::move(config_error));
    return out;
  }
  std::string dir = options.kconfigs_dir;
  if (dir.empty()) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    dir = FindKconfigsDir(n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string());
  }
  if (dir.empty()) {
    out.push_back(Check(DoctorState::kSkip, "base", "kconfig",
                        "kconfig fragments not found (" + KconfigsDirCandidatesText() +
                            "): pass --kconfigs-dir DIR"));
    return out;
  }
  StatusOr<std::vector<KconfigFragment>> fragments = LoadKconfigFragments(dir);
  if (!fragments.ok()) {
    out.push_back(Check(DoctorState::kSkip, "base", "kconfig", fragments.status().message()));
    return out;
  }
  for (DoctorCheck& c : KconfigChecks(fragments.value(), config, have_config ? config_path : ""))
    out.push_back(std::move(c));
  return out;
}

std::string FormatDoctorReport(const std::vector<DoctorCheck>& checks) {
  size_t width = 0;
  for (const DoctorCheck& c : checks) width = std::max(width, c.name.size());
  std::string out;
  std::vector<std::string> order;
  std::map<std::string, FeatureSummary> features;
  for (const DoctorCheck& c : checks) {
    std::string line = std::string(StateName(c.state)) + "  " + c.name +
                       std::string(width + 2 - c.name.size(), ' ') + c.detail;
    if (!c.fix.empty() && (c.state == DoctorState::kFail || c.state == DoctorState::kWarn)) {
      line += " -- fix: " + c.fix;
    }
    out += line + "\n";
    for (const std::string& note : c.notes) out += "      " + note + "\n";
    if (!features.count(c.feature)) order.push_back(c.feature);
    FeatureSummary& f = features[c.feature];
    f.optional = f.optional || c.optional;
    if (c.state == DoctorState::kFail) f.failed.push_back(c.name);
    if (c.state == DoctorState::kWarn) f.warned.push_back(c.name);
    if (c.state != DoctorState::kSkip) f.checked++;
  }
  out += "features:\n";
  for (const std::string& name : order) {
    const FeatureSummary& f = features[name];
    std::string verdict;
    if (!f.failed.empty()) {
      verdict = "FAIL (" + Join(f.failed, ", ") + ")";
    } else if (f.checked == 0) {
      verdict = "not checked";
    } else if (!f.warned.empty()) {
      verdict = f.optional ? "not available (" + Join(f.warned, ", ") + ")"
                           : "ok (warnings: " + Join(f.warned, ", ") + ")";
    } else {
      verdict = "ok";
    }
    out += "  " + name + (f.optional ? " (optional)" : "") + ": " + verdict + "\n";
  }
  std::vector<std::string> blocking;
  for (const DoctorCheck& c : checks) {
    if (c.needed && c.state == DoctorState::kFail) blocking.push_back(c.name);
  }
  out += blocking.empty() ? "default recording: ready\n"
                          : "default recording: NOT READY (" + Join(blocking, ", ") + ")\n";
  return out;
}

int DoctorExitCode(const std::vector<DoctorCheck>& checks) {
  for (const DoctorCheck& c : checks) {
    if (c.needed && c.state == DoctorState::kFail) return 1;
  }
  return 0;
}

int RunDoctorCommand(int argc, char** argv) {
  const std::string usage =
      "usage: sluice doctor [--tracefs PATH] [--kconfig PATH] [--kconfigs-dir DIR]\n"
      "  what this machine supports for tracing: one PASS/WARN/FAIL/SKIP line per check,\n"
      "  with the fix. Exit 0 when a default `sluice record` can work, else 1.\n"
      "  --tracefs PATH       tracefs to check (default: the mounted one)\n"
      "  --kconfig PATH       kernel .config, gzip'ed or not (default: /proc/config.gz,\n"
      "                       else /boot/config-$(uname -r))\n"
      "  --kconfigs-dir DIR   kconfig fragments (default, the first that has some:\n"
      "                       ../kconfigs or ../share/sluice/kconfigs next to the\n"
      "                       binary, " + InstalledKconfigsDir() + ", /sluice/kconfigs)\n"
      "  -h, --help           this text\n";
  enum { kTracefs = kFirstLongOnly, kKconfig, kKconfigsDir };
  static const struct option kOptions[] = {{"tracefs", required_argument, nullptr, kTracefs},
                                           {"kconfig", required_argument, nullptr, kKconfig},
                                           {"kconfigs-dir", required_argument, nullptr, kKconfigsDir},
                                           {"help", no_argument, nullptr, 'h'},
                                           {nullptr, 0, nullptr, 0}};
  DoctorOptions options;
  Status parsed = ParseCommandLine(argc, argv, "h", kOptions, [&](const CommandLineArg& arg) {
    switch (arg.id) {
      case kTracefs: options.tracefs_root = arg.value; break;
      case kKconfig: options.kconfig_path = arg.value; break;
      case kKconfigsDir: options.kconfigs_dir = arg.value; break;
      case 'h': return HelpRequested();
      default: return Status::Error(std::string("unexpected argument '") + arg.value + "'");
    }
    return Status::Ok();
  });
  if (!parsed.ok()) return CommandLineExit(parsed, "sluice doctor", usage.c_str());
  std::vector<DoctorCheck> checks = RunDoctorChecks(options);
  fputs(FormatDoctorReport(checks).c_str(), stdout);
  return DoctorExitCode(checks);
}

}  // namespace sluice
