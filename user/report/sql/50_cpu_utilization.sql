-- title: CPU utilization
-- Per CPU: how long it ran something other than its idle task, as a share of
-- the trace's span, and how many times it switched.
SELECT
  cpu,
  count(*) AS switches,
  round(sum(dur) / 1e9, 3) AS busy_s,
  round(100.0 * sum(dur) / trace_dur(), 2) AS busy_pct
FROM sched
WHERE utid != 0
GROUP BY cpu
ORDER BY cpu;
