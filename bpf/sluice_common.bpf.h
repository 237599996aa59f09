/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/* What every sluice BPF program shares: the maps, the settings user space
 * fills in between open and load, the in-kernel filters and the
 * reserve/submit path. The definitions live in bpf/sluice_maps.bpf.c; each
 * program file (bpf/sched.bpf.c, bpf/trace_marker.bpf.c) sees them as
 * externs, and `bpftool gen object` links all of them into one object, one
 * skeleton (build/bpf/sluice_events.skel.h).
 *
 * Path of one event, all of it in sluice_event_reserve() so that every
 * program counts the same way (the order matters for the accounting
 * identity in bpf/sluice_record.h):
 *
 *   program fires ─▶ task filter ──no──▶ filtered_task++        (not loss)
 *                        │yes
 *                        ▼
 *                    rate ceiling ─over─▶ filtered_rate++        (not loss)
 *                        │ok            (trace_marker: marker_truncated++
 *                        ▼               if the payload will be cut)
 *                    produced++ ─▶ reserve ──fail──▶ dropped++   (loss)
 *                                     │ok
 *                                     ▼
 *                                  fill, submit (wake-up policy below)
 *
 * Wake-ups. Every record is submitted with BPF_RB_NO_WAKEUP except the one
 * that makes the ring's unread bytes cross `sluice_wakeup_bytes`, which is
 * submitted with BPF_RB_FORCE_WAKEUP; user space also drains on a timer, so
 * a quiet ring is read at the latest one drain period later. With
 * sluice_wakeup_bytes == 0 the kernel's default policy applies (wake when
 * the consumer has caught up: up to one wake-up per event). */
#ifndef SLUICE_BPF_SLUICE_COMMON_BPF_H_
#define SLUICE_BPF_SLUICE_COMMON_BPF_H_

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "sluice_record.h"

/* ---- Maps. Declared once here; sluice_maps.bpf.c defines
 * SLUICE_DEFINE_MAPS to turn the declarations into the definitions. ---- */
#ifdef SLUICE_DEFINE_MAPS
#define SLUICE_MAP
#else
#define SLUICE_MAP extern
#endif

/* One ring per CPU: index = CPU id, inner rings created by user space. */
struct sluice_inner_ring {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4096); /* user space sets the real size */
};
SLUICE_MAP struct {
  __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
  __uint(max_entries, 1); /* user space sets: number of possible CPUs */
  __type(key, __u32);
  __array(values, struct sluice_inner_ring);
} sluice_rings SEC(".maps");

/* Or one ring shared by all CPUs (sluice_per_cpu_rings == 0). */
SLUICE_MAP struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4096);
} sluice_ring SEC(".maps");

SLUICE_MAP struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sluice_cpu_stats);
} sluice_counters SEC(".maps");

/* Token bucket of the per-CPU rate ceiling, kept as nanoseconds of credit:
 * each event costs sluice_rate_cost_ns, credit grows by elapsed time up to
 * sluice_rate_burst_ns. */
struct sluice_rate_state {
  __u64 credit_ns;
  __u64 last_ns;
};
SLUICE_MAP struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct sluice_rate_state);
} sluice_rate SEC(".maps");

/* pid/tgid filter: key = id, value = SLUICE_ID_* bits saying whether the id
 * was listed as a thread id, a thread group id, or both. */
#define SLUICE_ID_PID 1u
#define SLUICE_ID_TGID 2u
SLUICE_MAP struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1); /* user space sets */
  __type(key, __u32);
  __type(value, __u32);
} sluice_task_filter SEC(".maps");

/* ---- Settings: rodata, set by user space between open and load; the
 * verifier sees them as constants and prunes what they switch off. ---- */
extern const volatile __u32 sluice_per_cpu_rings;
extern const volatile __u64 sluice_wakeup_bytes;
extern const volatile __u32 sluice_filter_ids;
extern const volatile __u32 sluice_comm_prefix_count;
/* Prefix i as two little-endian words of comm and a mask of the bytes that
 * must match (the prefix length). */
extern const volatile __u64 sluice_comm_prefix[SLUICE_MAX_COMM_PREFIXES][2];
extern const volatile __u64 sluice_comm_mask[SLUICE_MAX_COMM_PREFIXES][2];
extern const volatile __u64 sluice_rate_cost_ns;  /* 0: no ceiling */
extern const volatile __u64 sluice_rate_burst_ns;

/* ---- Filters. ---- */

static __always_inline struct sluice_cpu_stats *sluice_stats_get(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&sluice_counters, &zero);
}

static __always_inline int sluice_comm_matches(const __u64 comm[2]) {
  for (int i = 0; i < SLUICE_MAX_COMM_PREFIXES; i++) {
    if (i >= sluice_comm_prefix_count) break;
    if (((comm[0] ^ sluice_comm_prefix[i][0]) & sluice_comm_mask[i][0]) == 0 &&
        ((comm[1] ^ sluice_comm_prefix[i][1]) & sluice_comm_mask[i][1]) == 0)
      return 1;
  }
  return 0;
}

/* Is a task of interest? With no filter configured every task is. With
 * filters, the task must match one of them (union of pids, tgids and comm
 * prefixes). tgid 0 means unknown (the tracepoint fallback cannot see the
 * tgid of a task other than current). */
static __always_inline int sluice_task_wanted(__u32 pid, __u32 tgid,
                                              const __u64 comm[2]) {
  if (!sluice_filter_ids && !sluice_comm_prefix_count) return 1;
  if (sluice_filter_ids) {
    __u32 *bits = bpf_map_lookup_elem(&sluice_task_filter, &pid);
    if (bits && (*bits & SLUICE_ID_PID)) return 1;
    if (tgid) {
      bits = bpf_map_lookup_elem(&sluice_task_filter, &tgid);
      if (bits && (*bits & SLUICE_ID_TGID)) return 1;
    }
  }
  if (sluice_comm_prefix_count && sluice_comm_matches(comm)) return 1;
  return 0;
}

static __always_inline int sluice_filters_active(void) {
  return sluice_filter_ids || sluice_comm_prefix_count;
}

/* Is current (the task the program runs in) of interest? Its comm is only
 * read when a filter is configured. */
static __always_inline int sluice_current_wanted(void) {
  if (!sluice_filters_active()) return 1;
  __u64 id = bpf_get_current_pid_tgid();
  __u64 comm[2];
  bpf_get_current_comm(comm, sizeof(comm));
  return sluice_task_wanted((__u32)id, (__u32)(id >> 32), comm);
}

/* Token bucket; races between preempted programs on one CPU only make the
 * ceiling approximate. */
static __always_inline int sluice_rate_ok(struct sluice_cpu_stats *ctr,
                                          __u64 now) {
  if (!sluice_rate_cost_ns) return 1;
  __u32 zero = 0;
  struct sluice_rate_state *st = bpf_map_lookup_elem(&sluice_rate, &zero);
  if (!st) return 1;
  __u64 credit = st->credit_ns;
  if (now > st->last_ns) credit += now - st->last_ns;
  st->last_ns = now;
  if (credit > sluice_rate_burst_ns) credit = sluice_rate_burst_ns;
  if (credit < sluice_rate_cost_ns) {
    st->credit_ns = credit;
    __sync_fetch_and_add(&ctr->filtered_rate, 1);
    return 0;
  }
  st->credit_ns = credit - sluice_rate_cost_ns;
  return 1;
}

/* ---- Reserve and submit. ---- */

struct sluice_emit {
  void *ring; /* the ring the record was reserved in (for the fill query) */
  struct sluice_cpu_stats *ctr;
};

/* Counts the attempt, reserves `size` bytes (a constant the verifier knows)
 * and fills the common header. NULL if the ring is full (counted). */
static __always_inline void *sluice_reserve(struct sluice_emit *e, __u64 size,
                                            __u16 type, __u64 ts) {
  struct sluice_record_header *h;
  __u32 cpu = bpf_get_smp_processor_id();

  __sync_fetch_and_add(&e->ctr->produced, 1);
  if (sluice_per_cpu_rings) {
    void *ring = bpf_map_lookup_elem(&sluice_rings, &cpu);
    if (!ring) {
      __sync_fetch_and_add(&e->ctr->dropped, 1);
      return NULL;
    }
    e->ring = ring;
    h = bpf_ringbuf_reserve(ring, size, 0);
  } else {
    e->ring = &sluice_ring;
    h = bpf_ringbuf_reserve(&sluice_ring, size, 0);
  }
  if (!h) {
    __sync_fetch_and_add(&e->ctr->dropped, 1);
    return NULL;
  }
  h->ts = ts;
  h->pid = (__u32)bpf_get_current_pid_tgid();
  h->type = type;
  h->cpu = (__u16)cpu;
  return h;
}

/* What a program says about one event to sluice_event_reserve(). */
struct sluice_event {
  __u64 size;     /* bytes to reserve: a constant at each call site */
  __u16 type;     /* enum sluice_record_type */
  /* The program's task-filter decision: which tasks an event is "about"
   * (one task, prev or next, the wakee or its waker...) differs per event;
   * what is counted does not. Always 1 when no filter is configured. */
  __u8 wanted;
  /* trace_marker only: the payload will be cut at marker_payload_bytes.
   * Counted once the event passed the filter and the rate ceiling, before
   * it is produced: a truncated marker that is then dropped still counts. */
  __u8 truncated;
};

/* The path drawn at the top of this file, in its order, for every program:
 * this CPU's counters, the task filter (filtered_task), the boot clock, the
 * rate ceiling (filtered_rate), then produced and the reserve (dropped).
 * Returns the record with its header filled and e->ring/e->ctr set for
 * sluice_submit(), or NULL when the event ends here (already counted). */
static __always_inline void *sluice_event_reserve(struct sluice_emit *e,
                                                  struct sluice_event ev) {
  e->ctr = sluice_stats_get();
  if (!e->ctr) return NULL;
  if (!ev.wanted) {
    __sync_fetch_and_add(&e->ctr->filtered_task, 1);
    return NULL;
  }
  __u64 ts = bpf_ktime_get_boot_ns();
  if (!sluice_rate_ok(e->ctr, ts)) return NULL;
  if (ev.truncated) __sync_fetch_and_add(&e->ctr->marker_truncated, 1);
  return sluice_reserve(e, ev.size, ev.type, ts);
}

#define SLUICE_RINGBUF_HDR_BYTES 8

static __always_inline void sluice_submit(struct sluice_emit *e, void *rec,
                                          __u64 size) {
  __u64 flags = 0;
  if (sluice_wakeup_bytes) {
    __u64 avail = bpf_ringbuf_query(e->ring, BPF_RB_AVAIL_DATA);
    __u64 rec_bytes = (size + SLUICE_RINGBUF_HDR_BYTES + 7) & ~7ull;
    flags = BPF_RB_NO_WAKEUP;
    /* Only the record that crosses the threshold wakes the reader. */
    if (avail >= sluice_wakeup_bytes &&
        avail < sluice_wakeup_bytes + rec_bytes) {
      flags = BPF_RB_FORCE_WAKEUP;
      __sync_fetch_and_add(&e->ctr->wakeups, 1);
    }
  }
  bpf_ringbuf_submit(rec, flags);
}

#endif /* SLUICE_BPF_SLUICE_COMMON_BPF_H_ */
