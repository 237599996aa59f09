-- sched.latency: sched_latency_for_running_interval summed per thread, states
-- and slices named by ts and cpu rather than id (see ps_sched_runnable.sql).
INCLUDE PERFETTO MODULE sched.latency;
SELECT l.utid, count(*) AS n, sum(r.ts - trace_start()) AS sum_running_ts, sum(s.ts - trace_start()) AS sum_sched_ts,
  sum(s.cpu) AS sum_sched_cpu, sum(s.dur) AS sum_sched_dur, sum(p.ts - trace_start()) AS sum_runnable_ts,
  sum(l.latency_dur) AS sum_latency, min(l.latency_dur) AS min_latency, max(l.latency_dur) AS max_latency
FROM sched_latency_for_running_interval AS l
JOIN thread_state AS r ON r.id = l.thread_state_id
JOIN thread_state AS p ON p.id = l.runnable_latency_id
JOIN sched AS s ON s.id = l.sched_id
GROUP BY l.utid
ORDER BY l.utid
LIMIT 190;
