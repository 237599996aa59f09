/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/* Scheduler and task lifecycle events: sched_switch, sched_wakeup,
 * sched_waking, sched_wakeup_new, sched_process_fork, sched_process_exec,
 * sched_process_exit, task_rename, task_newtask.
 *
 * Each event has two programs, and the loader keeps one (user/probes/bpf/bpf_loader.cc):
 *  - `tp_btf/<event>` (BTF-typed raw tracepoint, v5.5+): arguments are the
 *    kernel's own pointers, fields are read with direct CO-RE loads. The
 *    cheapest way in; preferred.
 *  - `tracepoint/<group>/<event>` (the classic tracepoint, with the
 *    kernel's formatted record as context): the fallback where tp_btf
 *    cannot be loaded. It sees only what the format has (no tgid of tasks
 *    other than current, no `preempt`; prev_state already encoded).
 * Both end in the same emit_* function, which decides which tasks the
 * event is about, reserves through sluice_event_reserve() and fills the
 * record of bpf/sched.h.
 *
 * Adding an event: a record in bpf/sched.h (or a new bpf/<probe>.h), an
 * emit_* function and the program(s) here, a decoder in
 * user/probes/bpf/bpf_event_decoder.cc, a row in user/probes/bpf/bpf_loader.cc's event table.
 * docs/BPF.md walks through it. */
#include "sluice_common.bpf.h"
#include "core_fixes.bpf.h"
#include "sched.h"

/* Set by the loader from the BTF of btf_trace_sched_switch (v5.18+ passes
 * prev_state as the 4th argument; see core_fixes.bpf.h). */
const volatile __u32 sched_switch_has_prev_state = 1;

static __always_inline __u32 current_tgid(void) {
  return (__u32)(bpf_get_current_pid_tgid() >> 32);
}

/* ---- Emitters (context-free: plain values in, record out). Each one
 * decides which tasks its event is about, then goes through
 * sluice_event_reserve() (bpf/sluice_common.bpf.h), which does the counting
 * in the same order for every program. ---- */

static __always_inline int emit_switch(const __u64 prev_comm[2], __s32 prev_pid,
                                       __u32 prev_tgid, __s32 prev_prio,
                                       const __u64 next_comm[2], __s32 next_pid,
                                       __u32 next_tgid, __s32 next_prio,
                                       __u64 prev_state, __u32 exit_state,
                                       __u32 flags) {
  struct sluice_emit e;
  struct sluice_sched_switch *r;

  /* A switch is about both tasks. */
  int wanted = sluice_task_wanted(prev_pid, prev_tgid, prev_comm) ||
               sluice_task_wanted(next_pid, next_tgid, next_comm);
  r = sluice_event_reserve(&e, (struct sluice_event){
      .size = sizeof(*r), .type = SLUICE_REC_SCHED_SWITCH, .wanted = wanted});
  if (!r) return 0;
  __builtin_memcpy(r->prev_comm, prev_comm, SLUICE_COMM_LEN);
  __builtin_memcpy(r->next_comm, next_comm, SLUICE_COMM_LEN);
  r->prev_pid = prev_pid;
  r->prev_prio = prev_prio;
  r->next_pid = next_pid;
  r->next_prio = next_prio;
  r->prev_state = prev_state;
  r->prev_exit_state = exit_state;
  r->flags = flags;
  sluice_submit(&e, r, sizeof(*r));
  return 0;
}

static __always_inline int emit_wakeup(__u16 type, const __u64 comm[2], __s32 pid,
                                       __u32 tgid, __s32 prio, __s32 target_cpu) {
  struct sluice_emit e;
  struct sluice_sched_wakeup *r;

  /* The waker (current) counts too: who wakes a wanted task is part of its
   * story, and the fallback cannot see the wakee's tgid. */
  int wanted = sluice_task_wanted(pid, tgid, comm) || sluice_current_wanted();
  r = sluice_event_reserve(&e, (struct sluice_event){
      .size = sizeof(*r), .type = type, .wanted = wanted});
  if (!r) return 0;
  __builtin_memcpy(r->comm, comm, SLUICE_COMM_LEN);
  r->pid = pid;
  r->prio = prio;
  r->target_cpu = target_cpu;
  r->_pad = 0;
  sluice_submit(&e, r, sizeof(*r));
  return 0;
}

static __always_inline int emit_fork(const __u64 parent_comm[2], __s32 parent_pid,
                                     __u32 parent_tgid, const __u64 child_comm[2],
                                     __s32 child_pid, __u32 child_tgid) {
  struct sluice_emit e;
  struct sluice_sched_process_fork *r;

  int wanted = sluice_task_wanted(parent_pid, parent_tgid, parent_comm) ||
               sluice_task_wanted(child_pid, child_tgid, child_comm);
  r = sluice_event_reserve(&e, (struct sluice_event){
      .size = sizeof(*r), .type = SLUICE_REC_SCHED_PROCESS_FORK, .wanted = wanted});
  if (!r) return 0;
  __builtin_memcpy(r->parent_comm, parent_comm, SLUICE_COMM_LEN);
  __builtin_memcpy(r->child_comm, child_comm, SLUICE_COMM_LEN);
  r->parent_pid = parent_pid;
  r->child_pid = child_pid;
  r->child_tgid = (__s32)child_tgid;
  r->_pad = 0;
  sluice_submit(&e, r, sizeof(*r));
  return 0;
}

/* exec runs in the task itself; comm is still the old one here (read only
 * when a filter is configured). */
static __always_inline int exec_wanted(__s32 pid) {
  if (!sluice_filters_active()) return 1;
  __u64 comm[2];
  bpf_get_current_comm(comm, sizeof(comm));
  return sluice_task_wanted(pid, current_tgid(), comm);
}

/* `filename` is a kernel string (bprm->filename) or, for the fallback, a
 * pointer into the tracepoint record. */
static __always_inline int emit_exec(__s32 pid, __s32 old_pid, const char *filename) {
  struct sluice_emit e;
  struct sluice_sched_process_exec *r;

  r = sluice_event_reserve(&e, (struct sluice_event){
      .size = sizeof(*r), .type = SLUICE_REC_SCHED_PROCESS_EXEC,
      .wanted = exec_wanted(pid)});
  if (!r) return 0;
  r->pid = pid;
  r->old_pid = old_pid;
  if (bpf_probe_read_kernel_str(r->filename, sizeof(r->filename), filename) < 0)
    r->filename[0] = 0;
  sluice_submit(&e, r, sizeof(*r));
  return 0;
}

static __always_inline int emit_exit(const __u64 comm[2], __s32 pid, __u32 tgid,
                                     __s32 prio) {
  struct sluice_emit e;
  struct sluice_sched_process_exit *r;

  r = sluice_event_reserve(&e, (struct sluice_event){
      .size = sizeof(*r), .type = SLUICE_REC_SCHED_PROCESS_EXIT,
      .wanted = sluice_task_wanted(pid, tgid, comm)});
  if (!r) return 0;
  __builtin_memcpy(r->comm, comm, SLUICE_COMM_LEN);
  r->pid = pid;
  r->tgid = (__s32)tgid;
  r->prio = prio;
  r->_pad = 0;
  sluice_submit(&e, r, sizeof(*r));
  return 0;
}

/* `newcomm` is a kernel pointer (tp_btf) or a pointer into the record. */
static __always_inline int emit_rename(const __u64 oldcomm[2], const char *newcomm,
                                       __s32 pid, __u32 tgid, __s32 oom_score_adj) {
  struct sluice_emit e;
  struct sluice_task_rename *r;

  r = sluice_event_reserve(&e, (struct sluice_event){
      .size = sizeof(*r), .type = SLUICE_REC_TASK_RENAME,
      .wanted = sluice_task_wanted(pid, tgid, oldcomm)});
  if (!r) return 0;
  __builtin_memcpy(r->oldcomm, oldcomm, SLUICE_COMM_LEN);
  if (bpf_probe_read_kernel_str(r->newcomm, sizeof(r->newcomm), newcomm) < 0)
    r->newcomm[0] = 0;
  r->pid = pid;
  r->oom_score_adj = oom_score_adj;
  sluice_submit(&e, r, sizeof(*r));
  return 0;
}

static __always_inline int emit_newtask(const __u64 comm[2], __s32 pid, __u32 tgid,
                                        __u64 clone_flags, __s32 oom_score_adj) {
  struct sluice_emit e;
  struct sluice_task_newtask *r;

  /* Also keep the new tasks of a wanted parent (current). */
  int wanted = sluice_task_wanted(pid, tgid, comm) || sluice_current_wanted();
  r = sluice_event_reserve(&e, (struct sluice_event){
      .size = sizeof(*r), .type = SLUICE_REC_TASK_NEWTASK, .wanted = wanted});
  if (!r) return 0;
  __builtin_memcpy(r->comm, comm, SLUICE_COMM_LEN);
  r->clone_flags = clone_flags;
  r->pid = pid;
  r->oom_score_adj = oom_score_adj;
  sluice_submit(&e, r, sizeof(*r));
  return 0;
}

/* ---- tp_btf programs: typed kernel arguments, direct CO-RE loads. ---- */

#define TASK_COMM(dst, task) __builtin_memcpy((dst), (task)->comm, SLUICE_COMM_LEN)

SEC("tp_btf/sched_switch")
int BPF_PROG(sluice_btf_sched_switch, bool preempt, struct task_struct *prev,
             struct task_struct *next) {
  __u64 prev_comm[2], next_comm[2];
  __u32 state;
  TASK_COMM(prev_comm, prev);
  TASK_COMM(next_comm, next);
  if (sched_switch_has_prev_state)
    state = (__u32)ctx[3];
  else
    state = sluice_task_state(prev);
  return emit_switch(prev_comm, prev->pid, prev->tgid, prev->prio, next_comm,
                     next->pid, next->tgid, next->prio, state,
                     (__u32)prev->exit_state, preempt ? SLUICE_SWITCH_PREEMPT : 0);
}

static __always_inline int btf_wakeup(__u16 type, struct task_struct *p) {
  __u64 comm[2];
  TASK_COMM(comm, p);
  return emit_wakeup(type, comm, p->pid, p->tgid, p->prio, sluice_task_cpu(p));
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sluice_btf_sched_wakeup, struct task_struct *p) {
  return btf_wakeup(SLUICE_REC_SCHED_WAKEUP, p);
}

SEC("tp_btf/sched_waking")
int BPF_PROG(sluice_btf_sched_waking, struct task_struct *p) {
  return btf_wakeup(SLUICE_REC_SCHED_WAKING, p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sluice_btf_sched_wakeup_new, struct task_struct *p) {
  return btf_wakeup(SLUICE_REC_SCHED_WAKEUP_NEW, p);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(sluice_btf_sched_process_fork, struct task_struct *parent,
             struct task_struct *child) {
  __u64 parent_comm[2], child_comm[2];
  TASK_COMM(parent_comm, parent);
  TASK_COMM(child_comm, child);
  return emit_fork(parent_comm, parent->pid, parent->tgid, child_comm, child->pid,
                   child->tgid);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(sluice_btf_sched_process_exec, struct task_struct *p, pid_t old_pid,
             struct linux_binprm *bprm) {
  return emit_exec(p->pid, old_pid, BPF_CORE_READ(bprm, filename));
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sluice_btf_sched_process_exit, struct task_struct *p) {
  __u64 comm[2];
  TASK_COMM(comm, p);
  return emit_exit(comm, p->pid, p->tgid, p->prio);
}

SEC("tp_btf/task_rename")
int BPF_PROG(sluice_btf_task_rename, struct task_struct *task, const char *comm) {
  __u64 oldcomm[2];
  TASK_COMM(oldcomm, task);
  return emit_rename(oldcomm, comm, task->pid, task->tgid,
                     BPF_CORE_READ(task, signal, oom_score_adj));
}

SEC("tp_btf/task_newtask")
int BPF_PROG(sluice_btf_task_newtask, struct task_struct *task, __u64 clone_flags) {
  __u64 comm[2];
  TASK_COMM(comm, task);
  return emit_newtask(comm, task->pid, task->tgid, clone_flags,
                      BPF_CORE_READ(task, signal, oom_score_adj));
}

/* ---- Plain tracepoint fallbacks: the formatted record as context. ---- */

#define RECORD_COMM(dst, field) \
  bpf_probe_read_kernel((dst), SLUICE_COMM_LEN, (field))

SEC("tracepoint/sched/sched_switch")
int sluice_tp_sched_switch(struct trace_event_raw_sched_switch *ctx) {
  __u64 prev_comm[2], next_comm[2];
  RECORD_COMM(prev_comm, ctx->prev_comm);
  RECORD_COMM(next_comm, ctx->next_comm);
  /* prev is current; next's tgid is not in the record. */
  return emit_switch(prev_comm, ctx->prev_pid, current_tgid(), ctx->prev_prio,
                     next_comm, ctx->next_pid, 0, ctx->next_prio,
                     (__u64)ctx->prev_state, 0, SLUICE_SWITCH_STATE_IS_FTRACE);
}

static __always_inline int tp_wakeup(__u16 type,
                                     struct trace_event_raw_sched_wakeup_template *ctx) {
  __u64 comm[2];
  RECORD_COMM(comm, ctx->comm);
  return emit_wakeup(type, comm, ctx->pid, 0, ctx->prio, ctx->target_cpu);
}

SEC("tracepoint/sched/sched_wakeup")
int sluice_tp_sched_wakeup(struct trace_event_raw_sched_wakeup_template *ctx) {
  return tp_wakeup(SLUICE_REC_SCHED_WAKEUP, ctx);
}

SEC("tracepoint/sched/sched_waking")
int sluice_tp_sched_waking(struct trace_event_raw_sched_wakeup_template *ctx) {
  return tp_wakeup(SLUICE_REC_SCHED_WAKING, ctx);
}

SEC("tracepoint/sched/sched_wakeup_new")
int sluice_tp_sched_wakeup_new(struct trace_event_raw_sched_wakeup_template *ctx) {
  return tp_wakeup(SLUICE_REC_SCHED_WAKEUP_NEW, ctx);
}

SEC("tracepoint/sched/sched_process_fork")
int sluice_tp_sched_process_fork(struct trace_event_raw_sched_process_fork *ctx) {
  __u64 parent_comm[2] = {}, child_comm[2] = {};
  struct trace_event_raw_sched_process_fork___data_loc *loc = (void *)ctx;
  if (bpf_core_field_exists(loc->__data_loc_parent_comm)) {
    sluice_read_data_loc_str(parent_comm, sizeof(parent_comm), ctx,
                             loc->__data_loc_parent_comm);
    sluice_read_data_loc_str(child_comm, sizeof(child_comm), ctx,
                             loc->__data_loc_child_comm);
  } else {
    struct trace_event_raw_sched_process_fork___pre_6_10 *old = (void *)ctx;
    RECORD_COMM(parent_comm, old->parent_comm);
    RECORD_COMM(child_comm, old->child_comm);
  }
  /* parent is current; the child shares its tgid unless it is a new
   * process, which the record does not say. */
  return emit_fork(parent_comm, ctx->parent_pid, current_tgid(), child_comm,
                   ctx->child_pid, 0);
}

SEC("tracepoint/sched/sched_process_exec")
int sluice_tp_sched_process_exec(struct trace_event_raw_sched_process_exec *ctx) {
  const char *filename = (const char *)ctx + (ctx->__data_loc_filename & 0xffff);
  return emit_exec(ctx->pid, ctx->old_pid, filename);
}

SEC("tracepoint/sched/sched_process_exit")
int sluice_tp_sched_process_exit(void *ctx) {
  /* The exiting task is current; its record layout changed twice (comm
   * became __data_loc in v6.10, group_dead was added later), so read the
   * task instead. */
  struct task_struct *task = bpf_get_current_task_btf();
  __u64 comm[2];
  bpf_get_current_comm(comm, sizeof(comm));
  return emit_exit(comm, (__u32)bpf_get_current_pid_tgid(), current_tgid(),
                   BPF_CORE_READ(task, prio));
}

SEC("tracepoint/task/task_rename")
int sluice_tp_task_rename(struct trace_event_raw_task_rename *ctx) {
  __u64 oldcomm[2];
  RECORD_COMM(oldcomm, ctx->oldcomm);
  return emit_rename(oldcomm, ctx->newcomm, ctx->pid, current_tgid(),
                     ctx->oom_score_adj);
}

SEC("tracepoint/task/task_newtask")
int sluice_tp_task_newtask(struct trace_event_raw_task_newtask *ctx) {
  __u64 comm[2];
  RECORD_COMM(comm, ctx->comm);
  /* The new task is not current: its tgid is unknown here. */
  return emit_newtask(comm, ctx->pid, 0, ctx->clone_flags, ctx->oom_score_adj);
}
