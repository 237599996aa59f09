-- Both idle_time_in_state tables: every row (none unless the trace has sysfs cpuidle counters).
INCLUDE PERFETTO MODULE linux.cpu.idle_time_in_state;
SELECT 'per_cpu' AS t, ts, machine_id, state, cpu, idle_percentage, total_residency, time_slice
FROM linux_per_cpu_idle_time_in_state_counters
UNION ALL
SELECT 'all', ts, machine_id, state, NULL, idle_percentage, total_residency, time_slice
FROM linux_cpu_idle_time_in_state_counters
ORDER BY 1, 2, 4, 5 LIMIT 150;
