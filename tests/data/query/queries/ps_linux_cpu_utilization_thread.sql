-- Per-thread utilization (per 100 ms and per second, for the busiest thread and the idle thread) and cycles.
INCLUDE PERFETTO MODULE linux.cpu.utilization.thread;
SELECT '100ms' AS t, ts, utilization, unnormalized_utilization, NULL AS a
FROM cpu_thread_utilization_per_period(100000000,
  (SELECT utid FROM sched WHERE utid > 0 GROUP BY utid ORDER BY sum(dur) DESC, utid LIMIT 1))
UNION ALL
SELECT 's', ts, utilization, unnormalized_utilization, NULL FROM cpu_thread_utilization_per_second(0)
UNION ALL
SELECT 'cycles', utid, runtime, millicycles, min_freq || ' ' || max_freq || ' ' || avg_freq
FROM (SELECT * FROM cpu_cycles_per_thread ORDER BY runtime DESC, utid LIMIT 40)
ORDER BY 1, 2;
