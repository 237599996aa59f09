-- System utilization per second and per 100 ms, and the cycle tables.
INCLUDE PERFETTO MODULE linux.cpu.utilization.system;
SELECT 's' AS t, ts, utilization, unnormalized_utilization, NULL AS a, NULL AS b FROM cpu_utilization_per_second
UNION ALL
SELECT '100ms', ts, utilization, unnormalized_utilization, NULL, NULL FROM cpu_utilization_per_period(100000000)
UNION ALL
SELECT 'cycles', millicycles, megacycles, runtime, min_freq, max_freq || ' ' || avg_freq FROM cpu_cycles
UNION ALL
SELECT 'per_cpu', ucpu, cpu, millicycles, runtime, avg_freq FROM cpu_cycles_per_cpu
UNION ALL
SELECT 'per_cpu_in', ucpu, cpu, millicycles, runtime, avg_freq
FROM cpu_cycles_per_cpu_in_interval(trace_start() + 100000000, 500000000)
ORDER BY 1, 2, 3;
