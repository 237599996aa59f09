#include "user/cmd/doctor_bpf_probes.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "user/probes/tracefs.h"
#include "shm/base/errno_message.h"

namespace sluice {
namespace {

int QuietPrint(enum libbpf_print_level, const char*, va_list) { return 0; }

// Closes an fd on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

BpfProbeResult Fail(std::string_view step, int err, std::string_view extra = {}) {
  BpfProbeResult r;
  r.error = err;
  r.detail = WithErrno(step, err);
  if (!extra.empty()) r.detail += " (" + std::string(extra) + ")";
  return r;
}

BpfProbeResult Ok() {
  BpfProbeResult r;
  r.ok = true;
  return r;
}

// The verifier log's last non-empty line: the reason a load was refused.
std::string LastLogLine(const char* log) {
  std::string_view s = TrimWhitespace(log);
  size_t nl = s.rfind('\n');
  return std::string(nl == std::string_view::npos ? s : s.substr(nl + 1));
}

// Loads "r0 = 0; exit". Returns the fd, or -errno with the verifier's reason
// in *why.
int LoadNop(bpf_prog_type type, bpf_attach_type attach, uint32_t btf_id, std::string* why) {
  const bpf_insn insns[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = 0},
      {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
  };
  char log[4096] = {};
  LIBBPF_OPTS(bpf_prog_load_opts, opts);
  opts.expected_attach_type = attach;
  opts.attach_btf_id = btf_id;
  opts.log_level = 1;
  opts.log_buf = log;
  opts.log_size = sizeof(log);
  int fd = bpf_prog_load(type, "sluice_doctor", "Dual MIT/GPL", insns, 2, &opts);
  if (fd < 0) {
    int err = errno;
    *why = LastLogLine(log);
    return -err;
  }
  return fd;
}

// Loads a BTF-typed tracing program on `btf_id` and attaches it.
BpfProbeResult LoadAndAttachTracing(bpf_attach_type attach, uint32_t btf_id) {
  std::string why;
  int prog = LoadNop(BPF_PROG_TYPE_TRACING, attach, btf_id, &why);
  if (prog < 0) return Fail("load", -prog, why);
  Fd prog_fd(prog);
  Fd link(bpf_raw_tracepoint_open(nullptr, prog_fd.get()));
  if (link.get() < 0) return Fail("attach", errno);
  return Ok();
}

}  // namespace

ScopedQuietLibbpf::ScopedQuietLibbpf()
    : previous_(reinterpret_cast<void*>(libbpf_set_print(QuietPrint))) {}
ScopedQuietLibbpf::~ScopedQuietLibbpf() {
  libbpf_set_print(reinterpret_cast<libbpf_print_fn_t>(previous_));
}

BpfProbeResult ProbeBpfRingbuf() {
  const uint32_t page = static_cast<uint32_t>(sysconf(_SC_PAGESIZE));
  Fd map(bpf_map_create(BPF_MAP_TYPE_RINGBUF, "sluice_doctor", 0, 0, page, nullptr));
  if (map.get() < 0) return Fail("bpf_map_create(BPF_MAP_TYPE_RINGBUF)", errno);
  return Ok();
}

BpfProbeResult ProbeTracepointProgram(const std::string& id_path) {
  StatusOr<std::string> id_text = ReadFile(id_path);
  if (!id_text.ok()) return Fail("read " + id_path, ENOENT);
  char* end = nullptr;
  std::string id_str(TrimWhitespace(id_text.value()));
  unsigned long long id = std::strtoull(id_str.c_str(), &end, 10);
  if (id_str.empty() || *end != '\0') return Fail("parse " + id_path, EINVAL);

  std::string why;
  int prog = LoadNop(BPF_PROG_TYPE_TRACEPOINT, static_cast<bpf_attach_type>(0), 0, &why);
  if (prog < 0) return Fail("load", -prog, why);
  Fd prog_fd(prog);
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_TRACEPOINT;
  attr.config = id;
  attr.sample_period = 1;
  attr.disabled = 1;  // Never counts: only the attach path is exercised.
  Fd event(static_cast<int>(
      syscall(SYS_perf_event_open, &attr, -1, 0, -1, static_cast<unsigned long>(PERF_FLAG_FD_CLOEXEC))));
  if (event.get() < 0) return Fail("perf_event_open", errno);
  if (ioctl(event.get(), PERF_EVENT_IOC_SET_BPF, prog_fd.get()) != 0) {
    return Fail("PERF_EVENT_IOC_SET_BPF", errno);
  }
  return Ok();
}

BpfProbeResult ProbeRawTracepoint(const char* tracepoint) {
  std::string why;
  int prog = LoadNop(BPF_PROG_TYPE_RAW_TRACEPOINT, static_cast<bpf_attach_type>(0), 0, &why);
  if (prog < 0) return Fail("load", -prog, why);
  Fd prog_fd(prog);
  Fd link(bpf_raw_tracepoint_open(tracepoint, prog_fd.get()));
  if (link.get() < 0) return Fail("attach", errno);
  return Ok();
}

BpfProbeResult ProbeTpBtf(const struct btf* vmlinux, const char* tracepoint) {
  if (vmlinux == nullptr) return Fail("no vmlinux BTF", ENOENT);
  const std::string type = std::string("btf_trace_") + tracepoint;
  int id = btf__find_by_name_kind(vmlinux, type.c_str(), BTF_KIND_TYPEDEF);
  if (id < 0) return Fail("find " + type + " in vmlinux BTF", ENOENT);
  return LoadAndAttachTracing(BPF_TRACE_RAW_TP, static_cast<uint32_t>(id));
}

BpfProbeResult ProbeFentry(const struct btf* vmlinux, const char* function) {
  if (vmlinux == nullptr) return Fail("no vmlinux BTF", ENOENT);
  int id = btf__find_by_name_kind(vmlinux, function, BTF_KIND_FUNC);
  if (id < 0) return Fail(std::string("find ") + function + " in vmlinux BTF", ENOENT);
  return LoadAndAttachTracing(BPF_TRACE_FENTRY, static_cast<uint32_t>(id));
}

}  // namespace sluice
