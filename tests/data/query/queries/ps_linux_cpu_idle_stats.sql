-- cpu_idle_stats: every row.
INCLUDE PERFETTO MODULE linux.cpu.idle_stats;
SELECT * FROM cpu_idle_stats ORDER BY cpu, state;
