/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/* trace_marker capture: every write to a tracefs trace_marker file, by any
 * process, becomes a record of bpf/trace_marker.h (decoded as an ftrace
 * `print` event).
 *
 * Two ways in; the loader (user/probes/bpf/bpf_loader.cc) probes and keeps one:
 *  - fentry/vfs_write: runs for writes that reach vfs_write() (write(2),
 *    pwrite(2)) and gets the struct file directly. Needs BPF trampolines
 *    (CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS); cheapest, and it leaves the
 *    syscall entry path alone. (Not fentry/tracing_mark_write: kernel/trace/
 *    is built without ftrace instrumentation, so no function there can be an
 *    fentry target; attaching fails with EBUSY.)
 *  - tracepoint/syscalls/sys_enter_write: runs for every write(2) on the
 *    machine, and turning it on makes every syscall of every task take the
 *    syscall-tracing slow path. It recognises trace_marker by the *file*
 *    behind the fd, read in-kernel: current->files->fdt->fd[fd]->f_inode.
 * Both compare (i_ino, i_sb->s_dev) with the files user space resolved with
 * stat() (and passed as rodata in the kernel's dev_t encoding). Paths, dup()ed
 * fds, /sys/kernel/debug/tracing vs /sys/kernel/tracing all resolve to the
 * same inode. Neither sees writev(2) (vfs_writev, sys_enter_writev), see
 * docs/BPF.md.
 *
 * Payload. The record is reserved in one of three size classes (small,
 * medium, marker_payload_bytes) so short atrace markers do not each take a
 * full 1 KiB of ring; the payload is copied from user memory straight into
 * the reserved record. `len` is the write's count, `captured` what was
 * copied. */
#include "sluice_common.bpf.h"
#include "trace_marker.h"

const volatile __u32 marker_count = 0;
const volatile __u64 marker_ino[SLUICE_MAX_MARKER_FILES] = {};
const volatile __u32 marker_dev[SLUICE_MAX_MARKER_FILES] = {};
/* Capacity of the largest class: a multiple of 8, at most
 * SLUICE_MAX_MARKER_PAYLOAD (the loader enforces both). */
const volatile __u32 marker_payload_bytes = 1024;

#define MARKER_SMALL 96
#define MARKER_MEDIUM 480

/* Index of the configured trace_marker `inode` is, or -1. */
static __always_inline int marker_index(struct inode *inode) {
  __u64 ino = BPF_CORE_READ(inode, i_ino);
  __u32 dev = BPF_CORE_READ(inode, i_sb, s_dev);
  for (int i = 0; i < SLUICE_MAX_MARKER_FILES; i++) {
    if (i >= marker_count) break;
    if (ino == marker_ino[i] && dev == marker_dev[i]) return i;
  }
  return -1;
}

/* Reserves a record with `cap` payload bytes (a constant in each caller's
 * branch) and copies `want` <= cap bytes of the payload into it. */
static __always_inline int marker_record(const char *ubuf, __u64 count, __u64 want,
                                         __u64 cap, __u16 index, __u16 flags,
                                         int wanted, int truncated) {
  struct sluice_emit e;
  struct sluice_trace_marker *r;
  __u64 size = sizeof(*r) + cap;

  r = sluice_event_reserve(&e, (struct sluice_event){
      .size = size, .type = SLUICE_REC_TRACE_MARKER, .wanted = wanted,
      .truncated = truncated});
  if (!r) return 0;
  /* Keep the bound visible to the verifier (clang may drop it otherwise:
   * the callers already know want <= cap). */
  barrier_var(want);
  if (want > cap) want = cap;
  r->tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
  r->len = count > 0xffffffffull ? 0xffffffffu : (__u32)count;
  r->marker_index = index;
  if (bpf_probe_read_user((char *)(r + 1), want, ubuf) < 0) {
    __sync_fetch_and_add(&e.ctr->marker_read_faults, 1);
    flags |= SLUICE_MARKER_READ_FAULT;
    want = 0;
  }
  r->captured = (__u32)want;
  r->flags = flags;
  sluice_submit(&e, r, size);
  return 0;
}

static __always_inline int emit_marker(const char *ubuf, __u64 count, __u16 index,
                                       __u16 flags) {
  if (count == 0) return 0;
  /* A marker is about its writer (current). */
  int wanted = sluice_current_wanted();
  int truncated = count > marker_payload_bytes;
  __u64 want = truncated ? marker_payload_bytes : count;
  if (want <= MARKER_SMALL && marker_payload_bytes > MARKER_SMALL)
    return marker_record(ubuf, count, want, MARKER_SMALL, index, flags, wanted, truncated);
  if (want <= MARKER_MEDIUM && marker_payload_bytes > MARKER_MEDIUM)
    return marker_record(ubuf, count, want, MARKER_MEDIUM, index, flags, wanted, truncated);
  return marker_record(ubuf, count, want, marker_payload_bytes, index, flags, wanted,
                       truncated);
}

SEC("tracepoint/syscalls/sys_enter_write")
int sluice_tp_sys_enter_write(struct syscall_trace_enter *ctx) {
  struct task_struct *task;
  struct fdtable *fdt;
  struct file **fds;
  struct file *file = NULL;
  __u64 fd, ubuf, count;
  int index;

  if (!marker_count) return 0;
  fd = ctx->args[0];
  ubuf = ctx->args[1];
  count = ctx->args[2];

  task = bpf_get_current_task_btf();
  fdt = BPF_CORE_READ(task, files, fdt);
  if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds)) return 0;
  fds = BPF_CORE_READ(fdt, fd);
  if (bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]) < 0 || !file) return 0;
  index = marker_index(BPF_CORE_READ(file, f_inode));
  if (index < 0) return 0;
  return emit_marker((const char *)ubuf, count, (__u16)index, 0);
}

SEC("fentry/vfs_write")
int BPF_PROG(sluice_fentry_vfs_write, struct file *file, const char *ubuf, size_t count) {
  if (!marker_count) return 0;
  int index = marker_index(file->f_inode);
  if (index < 0) return 0;
  return emit_marker(ubuf, count, (__u16)index, SLUICE_MARKER_FENTRY);
}
