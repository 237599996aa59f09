/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/* Kernel-version differences, resolved by CO-RE at load time. Every helper
 * here names the kernel change it papers over. vmlinux.h is generated from
 * the build host's kernel, so the *older* layouts are declared here as
 * `___flavor` structs: libbpf matches them by the name before the triple
 * underscore and checks field existence against the running kernel's BTF.
 *
 * Not handled here but in user space (user/probes/bpf/bpf_loader.cc), because it is a
 * difference in a tracepoint's *arguments* rather than in a struct:
 *  - sched_switch's 4th argument `prev_state` (v5.18, commit fa2c3254d7cf
 *    "sched/tracing: Don't re-read p->state when emitting sched_switch
 *    event"): the loader counts the arguments of btf_trace_sched_switch and
 *    sets `sched_switch_has_prev_state`. */
#ifndef SLUICE_BPF_CORE_FIXES_BPF_H_
#define SLUICE_BPF_CORE_FIXES_BPF_H_

#include <bpf/bpf_core_read.h>

/* task_struct::state was renamed to __state (and became unsigned int) in
 * v5.14, commit 2f064a59a11f "sched: Change task_struct::state". */
struct task_struct___pre_5_14 {
  long state;
} __attribute__((preserve_access_index));

static __always_inline __u32 sluice_task_state(struct task_struct *task) {
  if (bpf_core_field_exists(task->__state))
    return BPF_CORE_READ(task, __state);
  return (__u32)BPF_CORE_READ((struct task_struct___pre_5_14 *)task, state);
}

/* Where task_cpu() reads from. With CONFIG_THREAD_INFO_IN_TASK (x86 since
 * v4.9) the CPU lived in task_struct::cpu until v5.16 moved it back into
 * thread_info (commit bcf9033e5449 "sched: move CPU field back into
 * thread_info if THREAD_INFO_IN_TASK=y"). */
struct task_struct___pre_5_16 {
  int cpu;
} __attribute__((preserve_access_index));

static __always_inline __s32 sluice_task_cpu(struct task_struct *task) {
  if (bpf_core_field_exists(task->thread_info.cpu))
    return (__s32)BPF_CORE_READ(task, thread_info.cpu);
  return BPF_CORE_READ((struct task_struct___pre_5_16 *)task, cpu);
}

/* The plain-tracepoint fallback reads sched_process_fork's comms from the
 * event. They are char[16] in Debian's 6.1 and 6.12 kernels and __data_loc
 * strings in 6.18 ("tracing/sched: Use __string() instead of fixed lengths
 * for task->comm", first merged for v6.10 and reverted before that release).
 * vmlinux.h knows only the layout of the kernel it came from (the host's
 * 6.18; Debian's arm64 6.12 for make ARCH=arm64), so both layouts are
 * declared here as flavours and the program names neither through the
 * vmlinux.h struct. */
struct trace_event_raw_sched_process_fork___pre_6_10 {
  char parent_comm[16];
  char child_comm[16];
} __attribute__((preserve_access_index));

struct trace_event_raw_sched_process_fork___data_loc {
  __u32 __data_loc_parent_comm;
  __u32 __data_loc_child_comm;
} __attribute__((preserve_access_index));

/* Copies a __data_loc string of a tracepoint record (`loc`: offset in the
 * low 16 bits, length in the high 16, both from the record start) into
 * dst[size], NUL-terminated. */
static __always_inline void sluice_read_data_loc_str(void *dst, __u32 size,
                                                     const void *record,
                                                     __u32 loc) {
  bpf_probe_read_kernel_str(dst, size, (const char *)record + (loc & 0xffff));
}

#endif /* SLUICE_BPF_CORE_FIXES_BPF_H_ */
