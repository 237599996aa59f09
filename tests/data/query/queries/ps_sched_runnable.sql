-- sched.runnable: sched_previous_runnable_on_thread summed per thread. States
-- are named by their ts, not id: on loss_bpf sluice numbers thread_states of
-- different threads that share a ts in another order than upstream (a
-- thread's own states are in the same order, which is what the module uses).
-- prev_wakeup_runnable_id skips runnable states a wakeup from an interrupt
-- made (thread_state.irq_context, from the waking's common_flags).
INCLUDE PERFETTO MODULE sched.runnable;
SELECT s.utid, count(*) AS running, count(r.prev_runnable_id) AS with_prev,
  sum(s.ts - trace_start()) AS sum_ts, sum(p.ts - trace_start()) AS sum_prev_ts,
  min(s.ts - p.ts) AS min_gap, max(s.ts - p.ts) AS max_gap, sum(p.state = 'R+') AS prev_preempted,
  count(r.prev_wakeup_runnable_id) AS with_prev_wakeup, sum(w.ts - trace_start()) AS sum_prev_wakeup_ts
FROM sched_previous_runnable_on_thread AS r
JOIN thread_state AS s USING (id)
LEFT JOIN thread_state AS p ON p.id = r.prev_runnable_id
LEFT JOIN thread_state AS w ON w.id = r.prev_wakeup_runnable_id
GROUP BY s.utid
ORDER BY s.utid
LIMIT 190;
