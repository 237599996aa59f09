/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/* Records of the scheduler and task lifecycle programs (bpf/sched.bpf.c).
 * Each starts with struct sluice_record_header (bpf/sluice_record.h); the
 * fields mirror the kernel's tracepoint format files (events/sched/<name>/
 * format) so that user space writes the same FtraceEvent as the ftrace
 * source does for the same event. Sizes are pinned on the C++ side
 * (user/probes/bpf/bpf_event_decoder.cc). */
#ifndef SLUICE_BPF_SCHED_H_
#define SLUICE_BPF_SCHED_H_

#include "sluice_record.h"

/* sluice_sched_switch.flags */
#define SLUICE_SWITCH_PREEMPT 0x1u
/* prev_state already holds the value ftrace's format reports (the plain
 * tracepoint fallback reads it from the event); otherwise it is the raw
 * task state and user space encodes it like __trace_sched_switch_state(). */
#define SLUICE_SWITCH_STATE_IS_FTRACE 0x2u

struct sluice_sched_switch {            /* SLUICE_REC_SCHED_SWITCH */
  struct sluice_record_header hdr;
  char prev_comm[SLUICE_COMM_LEN];
  char next_comm[SLUICE_COMM_LEN];
  __s32 prev_pid;
  __s32 prev_prio;
  __s32 next_pid;
  __s32 next_prio;
  __u64 prev_state;                     /* see SLUICE_SWITCH_STATE_IS_FTRACE */
  __u32 prev_exit_state;                /* task->exit_state (raw mode only) */
  __u32 flags;
};

/* sched_wakeup, sched_waking and sched_wakeup_new share one layout (the
 * kernel's sched_wakeup_template); the header's type tells them apart. */
struct sluice_sched_wakeup {
  struct sluice_record_header hdr;
  char comm[SLUICE_COMM_LEN];
  __s32 pid;
  __s32 prio;
  __s32 target_cpu;
  __u32 _pad;
};

struct sluice_sched_process_fork {      /* SLUICE_REC_SCHED_PROCESS_FORK */
  struct sluice_record_header hdr;
  char parent_comm[SLUICE_COMM_LEN];
  char child_comm[SLUICE_COMM_LEN];
  __s32 parent_pid;
  __s32 child_pid;
  __s32 child_tgid;                     /* not in ftrace's format; kept for filters */
  __u32 _pad;
};

#define SLUICE_EXEC_FILENAME_LEN 256
struct sluice_sched_process_exec {      /* SLUICE_REC_SCHED_PROCESS_EXEC */
  struct sluice_record_header hdr;
  __s32 pid;
  __s32 old_pid;
  char filename[SLUICE_EXEC_FILENAME_LEN]; /* NUL-terminated, may be cut */
};

struct sluice_sched_process_exit {      /* SLUICE_REC_SCHED_PROCESS_EXIT */
  struct sluice_record_header hdr;
  char comm[SLUICE_COMM_LEN];
  __s32 pid;
  __s32 tgid;
  __s32 prio;
  __u32 _pad;
};

struct sluice_task_rename {             /* SLUICE_REC_TASK_RENAME */
  struct sluice_record_header hdr;
  char oldcomm[SLUICE_COMM_LEN];
  char newcomm[SLUICE_COMM_LEN];
  __s32 pid;
  __s32 oom_score_adj;
};

struct sluice_task_newtask {            /* SLUICE_REC_TASK_NEWTASK */
  struct sluice_record_header hdr;
  char comm[SLUICE_COMM_LEN];
  __u64 clone_flags;
  __s32 pid;
  __s32 oom_score_adj;
};

#endif /* SLUICE_BPF_SCHED_H_ */
