-- cpu_frequency_counters: per CPU, and the first 50 rows (none unless the trace has cpufreq).
INCLUDE PERFETTO MODULE linux.cpu.frequency;
SELECT * FROM (SELECT * FROM cpu_frequency_counters ORDER BY ts, cpu LIMIT 50)
UNION ALL
SELECT count(*), min(track_id), min(ts), sum(dur), sum(freq), ucpu, cpu FROM cpu_frequency_counters GROUP BY ucpu, cpu;
