-- cpu_idle_counters row by row: the first 100 intervals, all columns.
INCLUDE PERFETTO MODULE linux.cpu.idle;
SELECT * FROM cpu_idle_counters ORDER BY ts, cpu LIMIT 100;
