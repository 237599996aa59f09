/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/* The common part of every record the sluice BPF programs put in a ring
 * buffer, and the per-CPU counters they keep. Shared by the BPF programs
 * (bpf/<probe>.bpf.c, built against vmlinux.h) and user space
 * (user/probes/bpf/bpf_<x>.cc, which pins every size with static_assert). See docs/BPF.md.
 *
 * Rules for everything in bpf/<probe>.h headers:
 *  - fixed-width __u8/__u16/__u32/__u64 (and __s32/__s64) only, no long,
 *    no pointers, no bool: the layout must be the same for the BPF target
 *    and for x86-64 user space;
 *  - every field naturally aligned, padding explicit (_pad fields), sizes a
 *    multiple of 8 so records pack densely in the ring;
 *  - a record's payload layout is fixed by its type; user space treats the
 *    bytes as untrusted and checks the size the ring reports against the
 *    record's struct before reading a field.
 *
 * One ring buffer record:
 *
 *   ringbuf header (8 bytes, kernel's: len | busy/discard bits, page off)
 *   ┌──────────────────┬──────────┬────────┬────────┬─────────────────────┐
 *   │ ts (u64)         │ pid (u32)│type u16│cpu u16 │ type-specific body  │
 *   │ boot clock, ns   │ current  │        │        │ (bpf/sched.h, ...)  │
 *   └──────────────────┴──────────┴────────┴────────┴─────────────────────┘
 *    0                  8          12       14       16
 */
#ifndef SLUICE_BPF_SLUICE_RECORD_H_
#define SLUICE_BPF_SLUICE_RECORD_H_

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Record types: one per event, in the order the decoders' table lists
 * them (user/probes/bpf/bpf_event_decoder.cc). Never renumber: only append. */
enum sluice_record_type {
  SLUICE_REC_NONE = 0,
  SLUICE_REC_SCHED_SWITCH = 1,
  SLUICE_REC_SCHED_WAKEUP = 2,
  SLUICE_REC_SCHED_WAKING = 3,
  SLUICE_REC_SCHED_WAKEUP_NEW = 4,
  SLUICE_REC_SCHED_PROCESS_FORK = 5,
  SLUICE_REC_SCHED_PROCESS_EXEC = 6,
  SLUICE_REC_SCHED_PROCESS_EXIT = 7,
  SLUICE_REC_TASK_RENAME = 8,
  SLUICE_REC_TASK_NEWTASK = 9,
  SLUICE_REC_TRACE_MARKER = 10,
  SLUICE_REC_TYPE_COUNT = 11,
};

struct sluice_record_header {
  __u64 ts;   /* bpf_ktime_get_boot_ns(): CLOCK_BOOTTIME, like trace_clock=boot */
  __u32 pid;  /* current task's pid (thread id): ftrace's common_pid */
  __u16 type; /* enum sluice_record_type */
  __u16 cpu;  /* CPU the program ran on */
};

/* Per-CPU counters (one BPF_MAP_TYPE_PERCPU_ARRAY entry). Updated with
 * atomic adds: on kernels where syscall tracepoint programs run preemptible
 * (migration disabled), two programs can interleave on one CPU.
 *
 * Accounting identity, per CPU, once the programs are detached and the ring
 * is drained:   produced == delivered (user space) + dropped.
 * Filtered events are not produced: they never reach a ring and are not loss
 * of data the user asked for.
 *
 * User space reads this struct whole and keeps it as is (BpfCpuStats in
 * user/probes/bpf/bpf_data_source.h, which sums it as an array of __u64
 * words). Adding a counter: a __u64 field here, the program that counts it,
 * and its line in WriteCpuStats() (user/probes/bpf/bpf_data_source.cc) that
 * names its field of BpfStats.CpuStats (protos/sluice/bpf.proto). */
struct sluice_cpu_stats {
  __u64 produced;           /* records the programs tried to reserve */
  __u64 dropped;            /* reserve failed (ring full) or no ring: loss */
  __u64 filtered_task;      /* rejected by the pid/tgid/comm filters */
  __u64 filtered_rate;      /* rejected by the per-CPU rate ceiling */
  __u64 marker_truncated;   /* marker payloads cut at marker_payload_bytes */
  __u64 marker_read_faults; /* marker payloads not readable (sent empty) */
  __u64 wakeups;            /* forced consumer wake-ups (fill threshold) */
  __u64 _reserved;
};

/* Limits shared by both sides. */
#define SLUICE_COMM_LEN 16
#define SLUICE_MAX_COMM_PREFIXES 8
#define SLUICE_MAX_MARKER_FILES 8
/* Largest marker payload a record carries (marker_payload_bytes is clamped
 * to it). */
#define SLUICE_MAX_MARKER_PAYLOAD 16384

#endif /* SLUICE_BPF_SLUICE_RECORD_H_ */
