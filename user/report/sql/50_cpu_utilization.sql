-- title: CPU utilization
-- Per CPU: how long it ran something other than its idle task, as a share of
-- the trace's span, and how many times it switched to another task. A
-- relayed machine's CPUs follow the host's, named MACHINE cpu N.

-- sluice_thread_cpu holds sched's runs and time per thread and CPU (its cpu
-- is the ucpu: machine * 4096 + the CPU's number on its machine).
SELECT
  CASE WHEN c.machine_id = 0 THEN c.cpu
       ELSE (SELECT coalesce(name, 'machine ' || raw_id) FROM machine WHERE id = c.machine_id) || ' cpu ' || c.cpu
  END AS cpu,
  sum(tc.runs) AS switches,
  round(sum(tc.dur) / 1e9, 3) AS busy_s,
  round(100.0 * sum(tc.dur) / trace_dur(), 2) AS busy_pct
FROM sluice_thread_cpu AS tc
JOIN cpu AS c ON c.id = tc.cpu
WHERE tc.utid NOT IN (SELECT utid FROM thread WHERE tid = 0)
GROUP BY tc.cpu
ORDER BY tc.cpu;
