// The BPF half of `sluice doctor`: asks the kernel, by doing it, whether the
// BPF features sluice can use work here. Reading version numbers or config
// options is not enough: a kernel may have an option on and still refuse (a
// security policy, a hypervisor, a missing JIT), and backports add features
// to old versions.
//
// Every probe is a trivial program ("r0 = 0; exit") or a one-page map,
// created and closed at once. The attach probes (tracepoint, raw tracepoint,
// tp_btf, fentry) attach that no-op for the few microseconds between attach
// and close; nothing outlives the call, and tracefs state (enabled events,
// tracing_on) is never touched: a perf tracepoint event and a BPF link
// register their own probe on the tracepoint, not the tracefs enable bit.
//
// Probes return errno so the caller can name the fix: EPERM is privilege
// (or policy), EINVAL/E2BIG/ENOTSUPP are the kernel lacking the feature.
#ifndef SLUICE_USER_CMD_DOCTOR_BPF_PROBES_H_
#define SLUICE_USER_CMD_DOCTOR_BPF_PROBES_H_

#include <string>

struct btf;  // libbpf's parsed BTF.

namespace sluice {

struct BpfProbeResult {
  bool ok = false;
  int error = 0;       // errno of the step that failed.
  std::string detail;  // "load: Invalid argument", verifier's last line, ...
};

// Silences libbpf's own warnings (they would interleave with the report)
// for the lifetime of the object.
class ScopedQuietLibbpf {
 public:
  ScopedQuietLibbpf();
  ~ScopedQuietLibbpf();
  ScopedQuietLibbpf(const ScopedQuietLibbpf&) = delete;
  ScopedQuietLibbpf& operator=(const ScopedQuietLibbpf&) = delete;

 private:
  void* previous_;
};

// Creates (and closes) a BPF_MAP_TYPE_RINGBUF map of one page (5.8+).
BpfProbeResult ProbeBpfRingbuf();

// Loads a BPF_PROG_TYPE_TRACEPOINT program and attaches it, through a
// disabled perf event, to the tracepoint whose numeric id is in `id_path`
// (tracefs events/<group>/<name>/id): the path the linux.bpf source uses.
BpfProbeResult ProbeTracepointProgram(const std::string& id_path);

// Loads a BPF_PROG_TYPE_RAW_TRACEPOINT program and opens it on `tracepoint`
// (4.17+).
BpfProbeResult ProbeRawTracepoint(const char* tracepoint);

// Loads a BTF-typed raw tracepoint program (tp_btf, 5.5+) on
// btf_trace_<tracepoint> of `vmlinux` and attaches it.
BpfProbeResult ProbeTpBtf(const struct btf* vmlinux, const char* tracepoint);

// Loads an fentry program on the kernel function `function` (found by name
// in `vmlinux`) and attaches it (5.5+, x86 needs a BPF JIT and ftrace direct
// calls).
BpfProbeResult ProbeFentry(const struct btf* vmlinux, const char* function);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_DOCTOR_BPF_PROBES_H_
