-- cpu_idle_counters per CPU and idle state: intervals, their time and first/last start.
INCLUDE PERFETTO MODULE linux.cpu.idle;
SELECT cpu, idle, count(*) AS n, sum(dur) AS dur, min(ts) AS first_ts, max(ts) AS last_ts, min(track_id) AS track_id
FROM cpu_idle_counters GROUP BY cpu, idle ORDER BY cpu, idle;
