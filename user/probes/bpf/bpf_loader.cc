#include "user/probes/bpf/bpf_loader.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>

#include "sluice_events.skel.h"

#include "shm/base/cpu_list.h"
#include "shm/base/errno_message.h"
#include "shm/base/scoped_fd.h"
#include "user/probes/tracefs.h"

namespace sluice {
namespace {

static_assert(BpfSettings::kMaxMarkerPayloadBytes == SLUICE_MAX_MARKER_PAYLOAD);
static_assert(BpfSettings::kMaxCommPrefixes == SLUICE_MAX_COMM_PREFIXES);

constexpr const char* kVmlinuxBtf = "/sys/kernel/btf/vmlinux";

// ---- libbpf's print callback, captured. ----
//
// libbpf has one process-wide print callback. While a load is in progress it
// points here: messages at LIBBPF_WARN and above (which include the
// verifier log of a rejected program) are kept, the last kMaxLogBytes of
// them, to quote on failure; debug messages go to stderr only if verbose.
class LibbpfLogCapture {
 public:
  static constexpr size_t kMaxLogBytes = 256 * 1024;

  explicit LibbpfLogCapture(bool verbose) {
    std::lock_guard<std::mutex> lock(mu());
    state().verbose = verbose;
    state().log.clear();
    previous_ = libbpf_set_print(&Print);
  }
  ~LibbpfLogCapture() { libbpf_set_print(previous_); }

  // The last `lines` non-empty lines of what was captured.
  std::string Tail(size_t lines) const {
    std::lock_guard<std::mutex> lock(mu());
    std::vector<std::string> all;
    std::istringstream in(state().log);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) all.push_back(line);
    }
    std::string out;
    for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); i++) {
      out += "  " + all[i] + "\n";
    }
    return out;
  }

  // The verifier's last words: the line before "processed N insns" in the
  // last program log, else the last captured line.
  std::string Summary() const {
    std::lock_guard<std::mutex> lock(mu());
    std::vector<std::string> all;
    std::istringstream in(state().log);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) all.push_back(line);
    }
    std::string program;  // from "libbpf: prog 'NAME': failed to load: -13"
    for (const std::string& line : all) {
      size_t at = line.find("prog '");
      size_t end = at == std::string::npos ? at : line.find("': failed to load", at);
      if (end != std::string::npos) program = line.substr(at + 6, end - at - 6);
    }
    std::string prefix = program.empty() ? "" : "program " + program + ": ";
    for (size_t i = all.size(); i-- > 1;) {
      if (all[i].rfind("processed ", 0) == 0) return prefix + all[i - 1];
    }
    return all.empty() ? std::string() : prefix + all.back();
  }

 private:
  struct State {
    bool verbose = false;
    std::string log;
  };
  static std::mutex& mu() {
    static std::mutex m;
    return m;
  }
  static State& state() {
    static State s;
    return s;
  }
  static int Print(enum libbpf_print_level level, const char* fmt, va_list args) {
    va_list copy;
    va_copy(copy, args);
    int n = vsnprintf(nullptr, 0, fmt, copy);
    va_end(copy);
    if (n <= 0) return 0;
    std::string text(static_cast<size_t>(n) + 1, '\0');
    vsnprintf(text.data(), text.size(), fmt, args);
    text.resize(static_cast<size_t>(n));
    std::lock_guard<std::mutex> lock(mu());
    if (state().verbose) fputs(text.c_str(), stderr);
    if (level == LIBBPF_DEBUG) return 0;
    std::string& log = state().log;
    log += text;
    if (log.size() > kMaxLogBytes) log.erase(0, log.size() - kMaxLogBytes);
    return 0;
  }

  libbpf_print_fn_t previous_ = nullptr;
};

// ---- Preflight. ----

Status CheckCapabilities() {
  // CAP_PERFMON and CAP_BPF (v5.8) may be missing from old headers.
  constexpr int kCapSysAdmin = 21, kCapPerfmon = 38, kCapBpf = 39;
  __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return Status::Ok();  // let the load tell
  auto has = [&](int cap) { return (data[cap / 32].effective >> (cap % 32)) & 1u; };
  if (has(kCapSysAdmin) || (has(kCapBpf) && has(kCapPerfmon))) return Status::Ok();
  std::string missing = has(kCapBpf) ? "CAP_PERFMON" : has(kCapPerfmon) ? "CAP_BPF" : "CAP_BPF and CAP_PERFMON";
  return Status::Error("linux.bpf: loading tracing BPF programs needs CAP_BPF and CAP_PERFMON "
                       "(or CAP_SYS_ADMIN); this process lacks " + missing +
                       ": run as root or `setcap cap_bpf,cap_perfmon+ep` the binary");
}

// A minimal BPF_PROG_TYPE_TRACING program ("return 0") against a BTF id:
// can this kernel load it (and, for fentry, attach it: trampolines)?
bool ProbeTracingProgram(int attach_btf_id, bpf_attach_type type, bool attach) {
  struct bpf_insn insns[2] = {};
  insns[0].code = BPF_ALU64 | BPF_MOV | BPF_K;  // r0 = 0
  insns[1].code = BPF_JMP | BPF_EXIT;
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = type,
              .attach_btf_id = static_cast<__u32>(attach_btf_id));
  ScopedFd prog(bpf_prog_load(BPF_PROG_TYPE_TRACING, "sluice_probe", "Dual MIT/GPL", insns, 2, &opts));
  if (!prog.valid()) return false;
  if (!attach) return true;
  ScopedFd link(bpf_raw_tracepoint_open(nullptr, prog.get()));
  return link.valid();
}

// Parameters of a tracepoint's BTF prototype btf_trace_<name> (the first is
// the context pointer), or -1 if the kernel has no such typedef.
int TracepointBtfParams(const btf* vmlinux, const std::string& name, int* type_id) {
  int id = btf__find_by_name_kind(vmlinux, ("btf_trace_" + name).c_str(), BTF_KIND_TYPEDEF);
  if (type_id) *type_id = id;
  if (id < 0) return -1;
  const btf_type* t = btf__type_by_id(vmlinux, static_cast<__u32>(id));
  if (t) t = btf__type_by_id(vmlinux, t->type);  // PTR
  if (t && btf_is_ptr(t)) t = btf__type_by_id(vmlinux, t->type);
  if (!t || !btf_is_func_proto(t)) return -1;
  return btf_vlen(t);
}

std::string FindTracefs(const std::string& root) {
  if (!root.empty()) return root;
  TracefsOptions options;
  options.allow_mount = false;
  auto found = FindTracefsRoot(options);
  return found.ok() ? *found : std::string(Tracefs::kDefaultRoot);
}

bool TracefsHasEvent(const std::string& tracefs, std::string_view group, std::string_view name) {
  std::string path = tracefs + "/events/" + std::string(group) + "/" + std::string(name) + "/id";
  return access(path.c_str(), F_OK) == 0;
}

// Online CPUs among the possible ones; all of them if the list is unreadable.
std::vector<bool> OnlineCpus(uint32_t num_possible) {
  auto cpus = ReadCpuList(kOnlineCpusPath);
  std::vector<bool> online(num_possible, !cpus.ok());
  if (cpus.ok())
    for (uint32_t c : *cpus)
      if (c < num_possible) online[c] = true;
  return online;
}

// PREEMPT_RT kernels say so in /sys/kernel/realtime (the RT patch set, and
// mainline since v6.12) and in the version string.
bool KernelIsPreemptRt() {
  std::ifstream rt("/sys/kernel/realtime");
  std::string v;
  if (std::getline(rt, v) && v == "1") return true;
  std::ifstream version("/proc/version");
  std::string text;
  std::getline(version, text);
  return text.find("PREEMPT_RT") != std::string::npos;
}

struct EventPrograms {
  BpfEvent event;
  bpf_program* btf;  // tp_btf program, or null
  bpf_program* tp;   // classic tracepoint program
};

}  // namespace

StatusOr<std::unique_ptr<BpfLoader>> BpfLoader::Load(const BpfSettings& settings,
                                                     const BpfLoaderOptions& options) {
  if (access(kVmlinuxBtf, R_OK) != 0) {
    return Status::Error(std::string("linux.bpf: ") + kVmlinuxBtf +
                         " is missing: the kernel was built without CONFIG_DEBUG_INFO_BTF=y, "
                         "which the CO-RE BPF programs need (use the linux.ftrace source instead)");
  }
  SLUICE_RETURN_IF_ERROR(CheckCapabilities());
  std::unique_ptr<BpfLoader> loader(new BpfLoader());
  SLUICE_RETURN_IF_ERROR(loader->Open(settings, options));
  return loader;
}

// The libbpf lifecycle: open → choose programs → set rodata → size maps →
// load → fill maps (attach is Attach()). Each step keeps what it creates in
// a member, so a failure anywhere has one cleanup path: Load() drops the
// half-built loader and ~BpfLoader() frees the object and the rings.
Status BpfLoader::Open(const BpfSettings& settings, const BpfLoaderOptions& options) {
  warn_ = options.warn ? options.warn : [](const std::string& m) {
    fprintf(stderr, "sluice: %s\n", m.c_str());
  };
  shared_ring_ = options.shared_ring;
  int possible = libbpf_num_possible_cpus();
  if (possible <= 0) return Status::Error("linux.bpf: cannot read the number of possible CPUs");
  num_cpus_ = static_cast<uint32_t>(possible);

  LibbpfLogCapture capture(options.verbose);
  skel_ = sluice_events__open();
  if (!skel_) {
    return Status::Error("linux.bpf: cannot open the BPF object: " + ErrnoMessage(errno) + "\n" +
                         capture.Tail(10));
  }

  // The kernel's BTF answers the choice and the sched_switch setting; freed
  // before the load, which parses its own copy.
  std::unique_ptr<btf, void (*)(btf*)> vmlinux(btf__load_vmlinux_btf(), &btf__free);
  if (!vmlinux) {
    return Status::Error(std::string("linux.bpf: cannot parse ") + kVmlinuxBtf + ": " +
                         ErrnoMessage(errno) + " (CONFIG_DEBUG_INFO_BTF)");
  }
  const std::string tracefs = FindTracefs(options.tracefs_root);
  ChooseEventPrograms(settings, options, vmlinux.get(), tracefs);
  if (settings.has(BpfEvent::kPrint)) ChooseMarkerProgram(options, vmlinux.get(), tracefs);
  SetRodata(settings, options, vmlinux.get());
  vmlinux.reset();
  if (info_.events.empty()) {
    return Status::Error("linux.bpf: none of the configured events can be attached on this kernel (" +
                         std::to_string(info_.skipped.size()) + " skipped, see warnings)");
  }

  SLUICE_RETURN_IF_ERROR(SizeMaps(settings));
  int err = sluice_events__load(skel_);
  if (err) {
    std::string summary = capture.Summary();
    return Status::Error("linux.bpf: the kernel rejected the BPF programs (" + ErrnoMessage(err) +
                         ")" + (summary.empty() ? "" : ": " + summary) +
                         "\nverifier log tail:\n" + capture.Tail(20));
  }
  SLUICE_RETURN_IF_ERROR(FillTaskFilter(settings));
  SLUICE_RETURN_IF_ERROR(CreateRings(settings));
  if (options.enable_run_time_stats) stats_fd_.reset(bpf_enable_stats(BPF_STATS_RUN_TIME));
  return Status::Ok();
}

// Per event: tp_btf if the kernel can load a BTF-typed raw tracepoint and
// has btf_trace_<name>, else the classic tracepoint if tracefs has it, else
// skipped with a warning. Every program starts with autoload off; the
// chosen ones get it back.
void BpfLoader::ChooseEventPrograms(const BpfSettings& settings, const BpfLoaderOptions& options,
                                    const btf* vmlinux, const std::string& tracefs) {
  bool tp_btf_ok = false;
  if (!options.force_tracepoint) {
    int id = -1;
    if (TracepointBtfParams(vmlinux, "sched_switch", &id) >= 0)
      tp_btf_ok = ProbeTracingProgram(id, BPF_TRACE_RAW_TP, /*attach=*/false);
  }
  auto* p = &skel_->progs;
  const EventPrograms table[] = {
      {BpfEvent::kSchedSwitch, p->sluice_btf_sched_switch, p->sluice_tp_sched_switch},
      {BpfEvent::kSchedWakeup, p->sluice_btf_sched_wakeup, p->sluice_tp_sched_wakeup},
      {BpfEvent::kSchedWaking, p->sluice_btf_sched_waking, p->sluice_tp_sched_waking},
      {BpfEvent::kSchedWakeupNew, p->sluice_btf_sched_wakeup_new, p->sluice_tp_sched_wakeup_new},
      {BpfEvent::kSchedProcessFork, p->sluice_btf_sched_process_fork, p->sluice_tp_sched_process_fork},
      {BpfEvent::kSchedProcessExec, p->sluice_btf_sched_process_exec, p->sluice_tp_sched_process_exec},
      {BpfEvent::kSchedProcessExit, p->sluice_btf_sched_process_exit, p->sluice_tp_sched_process_exit},
      {BpfEvent::kTaskRename, p->sluice_btf_task_rename, p->sluice_tp_task_rename},
      {BpfEvent::kTaskNewtask, p->sluice_btf_task_newtask, p->sluice_tp_task_newtask},
  };
  bpf_program* prog;
  bpf_object__for_each_program(prog, skel_->obj) bpf_program__set_autoload(prog, false);

  bool any_btf = false, any_tp = false;
  for (const EventPrograms& e : table) {
    if (!settings.has(e.event)) continue;
    BpfEventName n = BpfEventNameOf(e.event);
    if (tp_btf_ok && TracepointBtfParams(vmlinux, std::string(n.name), nullptr) >= 0) {
      bpf_program__set_autoload(e.btf, true);
      any_btf = true;
    } else if (TracefsHasEvent(tracefs, n.group, n.name)) {
      bpf_program__set_autoload(e.tp, true);
      any_tp = true;
    } else {
      std::string why = std::string(n.group) + "/" + std::string(n.name) +
                        ": no such tracepoint on this kernel";
      warn_("linux.bpf: skipping " + why);
      info_.skipped.push_back(why);
      continue;
    }
    info_.events.push_back(e.event);
  }
  if (any_btf && !tp_btf_ok) any_btf = false;
  info_.tracepoint_attach = any_btf ? (any_tp ? "tp_btf+tracepoint" : "tp_btf")
                                    : (any_tp ? "tracepoint" : "");
  if (!tp_btf_ok && any_tp && !options.force_tracepoint) {
    warn_("linux.bpf: this kernel cannot load tp_btf programs; using classic tracepoints "
          "(slower: formatted records, no preempt flag)");
  }
}

// trace_marker: fentry on vfs_write if a probe program can be loaded *and
// attached* and the kernel is not PREEMPT_RT, else syscalls/sys_enter_write.
void BpfLoader::ChooseMarkerProgram(const BpfLoaderOptions& options, const btf* vmlinux,
                                    const std::string& tracefs) {
  auto* p = &skel_->progs;
  int write_id = btf__find_by_name_kind(vmlinux, "vfs_write", BTF_KIND_FUNC);
  const bool rt = KernelIsPreemptRt() && !options.fentry_on_rt;
  bool fentry_ok = !options.force_marker_tracepoint && !rt && write_id > 0 &&
                   ProbeTracingProgram(write_id, BPF_TRACE_FENTRY, /*attach=*/true);
  if (options.marker_files.empty()) {
    info_.skipped.push_back("ftrace/print: no trace_marker file resolved");
    warn_("linux.bpf: skipping ftrace/print: no trace_marker file to watch");
  } else if (fentry_ok) {
    bpf_program__set_autoload(p->sluice_fentry_vfs_write, true);
    info_.marker_attach = "fentry";
    info_.events.push_back(BpfEvent::kPrint);
  } else if (TracefsHasEvent(tracefs, "syscalls", "sys_enter_write")) {
    bpf_program__set_autoload(p->sluice_tp_sys_enter_write, true);
    info_.marker_attach = "sys_enter_write";
    info_.events.push_back(BpfEvent::kPrint);
  } else {
    std::string why = "ftrace/print: neither fentry/vfs_write nor the "
                      "syscalls/sys_enter_write tracepoint (CONFIG_FTRACE_SYSCALLS) is available";
    warn_("linux.bpf: skipping " + why);
    info_.skipped.push_back(why);
  }
}

// Rodata: between open and load, while libbpf still holds it writable; the
// verifier then sees these as constants.
void BpfLoader::SetRodata(const BpfSettings& settings, const BpfLoaderOptions& options,
                          const btf* vmlinux) {
  auto* ro = skel_->rodata;
  ro->sluice_per_cpu_rings = shared_ring_ ? 0 : 1;
  ro->sluice_wakeup_bytes =
      static_cast<uint64_t>(settings.ring_bytes) * std::min<uint32_t>(options.wakeup_fill_percent, 100) / 100;
  ro->sluice_filter_ids = (settings.pids.empty() && settings.tgids.empty()) ? 0 : 1;
  ro->sluice_comm_prefix_count = static_cast<uint32_t>(settings.comm_prefixes.size());
  for (size_t i = 0; i < settings.comm_prefixes.size() && i < SLUICE_MAX_COMM_PREFIXES; i++) {
    for (int w = 0; w < 2; w++) {
      ro->sluice_comm_prefix[i][w] = settings.comm_prefixes[i].word[w];
      ro->sluice_comm_mask[i][w] = settings.comm_prefixes[i].mask[w];
    }
  }
  ro->sluice_rate_cost_ns = settings.rate_cost_ns;
  ro->sluice_rate_burst_ns = settings.rate_burst_ns;
  // v5.18+ passes prev_state as the 4th argument (5 params with ctx).
  ro->sched_switch_has_prev_state = TracepointBtfParams(vmlinux, "sched_switch", nullptr) >= 5;
  ro->marker_count = static_cast<uint32_t>(std::min<size_t>(options.marker_files.size(), SLUICE_MAX_MARKER_FILES));
  if (options.marker_files.size() > SLUICE_MAX_MARKER_FILES) {
    warn_("linux.bpf: watching only the first " + std::to_string(SLUICE_MAX_MARKER_FILES) +
          " trace_marker files");
  }
  for (uint32_t i = 0; i < ro->marker_count; i++) {
    ro->marker_ino[i] = options.marker_files[i].ino;
    ro->marker_dev[i] = options.marker_files[i].kernel_dev;
  }
  ro->marker_payload_bytes = settings.marker_payload_bytes;
}

// Map sizes, also before the load.
Status BpfLoader::SizeMaps(const BpfSettings& settings) {
  const uint32_t page = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
  // The outer map's inner template is a real ring of the right size (libbpf
  // 1.1 cannot resize the inner definition of a map-in-map).
  template_ring_fd_.reset(bpf_map_create(BPF_MAP_TYPE_RINGBUF, "sluice_rb_tmpl", 0, 0,
                                         shared_ring_ ? page : settings.ring_bytes, nullptr));
  if (!template_ring_fd_.valid()) {
    return Status::Error("linux.bpf: cannot create a " + std::to_string(settings.ring_bytes) +
                         "-byte BPF ring buffer: " + ErrnoMessage(errno) + " (lower ringbuf_size_kb)");
  }
  bpf_map__set_inner_map_fd(skel_->maps.sluice_rings, template_ring_fd_.get());
  bpf_map__set_max_entries(skel_->maps.sluice_rings, shared_ring_ ? 1 : num_cpus_);
  bpf_map__set_max_entries(skel_->maps.sluice_ring, shared_ring_ ? settings.ring_bytes : page);
  uint32_t ids = static_cast<uint32_t>(settings.pids.size() + settings.tgids.size());
  bpf_map__set_max_entries(skel_->maps.sluice_task_filter, std::max<uint32_t>(1, ids));
  return Status::Ok();
}

// After the load: the pid/tgid filter map (an id listed as both gets both
// bits).
Status BpfLoader::FillTaskFilter(const BpfSettings& settings) {
  int filter_fd = bpf_map__fd(skel_->maps.sluice_task_filter);
  auto add_id = [&](uint32_t id, uint32_t bit) {
    uint32_t bits = 0;
    bpf_map_lookup_elem(filter_fd, &id, &bits);
    bits |= bit;
    return bpf_map_update_elem(filter_fd, &id, &bits, BPF_ANY);
  };
  for (uint32_t pid : settings.pids) {
    if (add_id(pid, 1)) return Status::Error("linux.bpf: cannot fill the pid filter: " + ErrnoMessage(errno));
  }
  for (uint32_t tgid : settings.tgids) {
    if (add_id(tgid, 2)) return Status::Error("linux.bpf: cannot fill the tgid filter: " + ErrnoMessage(errno));
  }
  return Status::Ok();
}

// After the load: the ring(s) user space reads. Per-CPU mode creates one
// ring per online CPU and installs it in sluice_rings.
Status BpfLoader::CreateRings(const BpfSettings& settings) {
  online_ = OnlineCpus(num_cpus_);
  if (shared_ring_) {
    ring_fds_.push_back(bpf_map__fd(skel_->maps.sluice_ring));
    return Status::Ok();
  }
  int outer = bpf_map__fd(skel_->maps.sluice_rings);
  ring_fds_.assign(num_cpus_, -1);
  for (uint32_t cpu = 0; cpu < num_cpus_; cpu++) {
    if (!online_[cpu]) continue;
    std::string name = "sluice_rb" + std::to_string(cpu);
    int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, name.c_str(), 0, 0, settings.ring_bytes, nullptr);
    if (fd < 0) {
      return Status::Error("linux.bpf: cannot create the ring buffer of CPU " + std::to_string(cpu) +
                           " (" + std::to_string(settings.ring_bytes) + " bytes): " + ErrnoMessage(errno) +
                           " (lower ringbuf_size_kb)");
    }
    owned_rings_.emplace_back(fd);
    ring_fds_[cpu] = fd;
    if (bpf_map_update_elem(outer, &cpu, &fd, BPF_ANY) != 0) {
      return Status::Error("linux.bpf: cannot install the ring of CPU " + std::to_string(cpu) +
                           ": " + ErrnoMessage(errno));
    }
  }
  return Status::Ok();
}

Status BpfLoader::Attach() {
  bpf_program* prog;
  std::vector<std::string> failed;
  bpf_object__for_each_program(prog, skel_->obj) {
    if (!bpf_program__autoload(prog)) continue;
    bpf_link* link = bpf_program__attach(prog);
    if (!link) {
      std::string why = std::string(bpf_program__name(prog)) + ": attach failed: " + ErrnoMessage(errno);
      warn_("linux.bpf: skipping " + why);
      info_.skipped.push_back(why);
      failed.push_back(why);
      continue;
    }
    links_.push_back(link);
  }
  if (links_.empty()) {
    return Status::Error("linux.bpf: no BPF program could be attached" +
                         (failed.empty() ? std::string() : " (first: " + failed[0] + ")"));
  }
  return Status::Ok();
}

void BpfLoader::Detach() {
  for (bpf_link* link : links_) bpf_link__destroy(link);
  links_.clear();
}

BpfLoader::~BpfLoader() {
  Detach();
  if (skel_) sluice_events__destroy(skel_);
}

Status BpfLoader::ReadCounters(std::vector<sluice_cpu_stats>* out) const {
  // A per-CPU map's lookup fills one value per possible CPU.
  out->assign(num_cpus_, sluice_cpu_stats{});
  uint32_t key = 0;
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.sluice_counters), &key, out->data()) != 0) {
    return Status::Error("linux.bpf: cannot read the counters map: " + ErrnoMessage(errno));
  }
  return Status::Ok();
}

Status BpfLoader::ForEachProgramInfo(const std::function<void(const bpf_prog_info&)>& visit) const {
  bpf_program* prog;
  bpf_object__for_each_program(prog, skel_->obj) {
    int fd = bpf_program__fd(prog);
    if (fd < 0) continue;  // Not loaded (its event is missing here).
    bpf_prog_info info = {};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) {
      return Status::Error("linux.bpf: cannot read program info: " + ErrnoMessage(errno));
    }
    visit(info);
  }
  return Status::Ok();
}

Status BpfLoader::ReadMisses(uint64_t* misses) const {
  *misses = 0;
  return ForEachProgramInfo([&](const bpf_prog_info& info) { *misses += info.recursion_misses; });
}

Status BpfLoader::ReadRunStats(uint64_t* run_time_ns, uint64_t* run_count) const {
  *run_time_ns = 0;
  *run_count = 0;
  return ForEachProgramInfo([&](const bpf_prog_info& info) {
    *run_time_ns += info.run_time_ns;
    *run_count += info.run_cnt;
  });
}

}  // namespace sluice
