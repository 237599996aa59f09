-- title: CPU utilization
-- Per CPU: how long it ran something other than its idle task, as a share of
-- the trace's span, and how many times it switched to another task.

-- sluice_thread_cpu holds sched's runs and time per thread and CPU.
SELECT
  cpu,
  sum(runs) AS switches,
  round(sum(dur) / 1e9, 3) AS busy_s,
  round(100.0 * sum(dur) / trace_dur(), 2) AS busy_pct
FROM sluice_thread_cpu
WHERE utid != 0
GROUP BY cpu
ORDER BY cpu;
