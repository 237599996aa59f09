-- Per-process utilization (per 200 ms and per second, for the busiest process) and cycles.
INCLUDE PERFETTO MODULE linux.cpu.utilization.process;
SELECT '200ms' AS t, ts, utilization, unnormalized_utilization, NULL AS a
FROM cpu_process_utilization_per_period(200000000,
  (SELECT upid FROM sched JOIN thread USING (utid) WHERE utid > 0 AND upid IS NOT NULL
   GROUP BY upid ORDER BY sum(dur) DESC, upid LIMIT 1))
UNION ALL
SELECT 's', ts, utilization, unnormalized_utilization, NULL
FROM cpu_process_utilization_per_second(
  (SELECT upid FROM sched JOIN thread USING (utid) WHERE utid > 0 AND upid IS NOT NULL
   GROUP BY upid ORDER BY sum(dur) DESC, upid LIMIT 1))
UNION ALL
SELECT 'cycles', upid, runtime, millicycles, min_freq || ' ' || max_freq || ' ' || avg_freq
FROM (SELECT * FROM cpu_cycles_per_process ORDER BY runtime DESC, upid LIMIT 40)
ORDER BY 1, 2;
