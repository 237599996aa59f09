-- cpu_cycles_per_thread_per_cpu and its in-interval form over the trace's first second: the 60 busiest pairs.
INCLUDE PERFETTO MODULE linux.cpu.utilization.thread_cpu;
SELECT 'all' AS t, * FROM (SELECT * FROM cpu_cycles_per_thread_per_cpu ORDER BY runtime DESC, utid, ucpu LIMIT 60)
UNION ALL
SELECT 'in', * FROM (
  SELECT * FROM cpu_cycles_per_thread_per_cpu_in_interval(trace_start(), 1000000000)
  ORDER BY runtime DESC, utid, ucpu LIMIT 60)
ORDER BY 1, 7 DESC, 2, 3;
