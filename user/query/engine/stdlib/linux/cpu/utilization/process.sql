-- Per-process CPU use: cpu_process_utilization_per_second (and _per_period
-- for any period) for one process, and the cycles each process ran
-- (cpu_cycles_per_process).
--
-- Utilization sums the process's non-idle threads' slices, each in the period
-- it starts in, up to that period's end, divided by the number of CPUs
-- (highest sched CPU number + 1); a slice still running at the end counts as
-- -1 ns, as upstream. Threads without a process count for no process.
--
-- Upstream's cpu_cycles_per_process_in_interval and
-- cpu_process_utilization_in_interval are not here: their awake_* columns
-- need to_monotonic(), which sluice lacks.

INCLUDE PERFETTO MODULE linux.cpu.utilization.general;
INCLUDE PERFETTO MODULE linux.cpu.utilization.thread_cpu;
INCLUDE PERFETTO MODULE time.conversion;

CREATE PERFETTO FUNCTION cpu_process_utilization_per_period(interval LONG, upid JOINID(process.id))
RETURNS TABLE(ts TIMESTAMP, utilization DOUBLE, unnormalized_utilization DOUBLE)
AS
SELECT *
FROM _cpu_avg_utilization_per_period!($interval, (
  SELECT s.ts, s.ts + s.dur AS ts_end
  FROM sched AS s
  JOIN thread AS t USING (utid)
  JOIN process AS p ON p.upid = t.upid
  WHERE t.upid = $upid AND NOT t.is_idle
));

CREATE PERFETTO FUNCTION cpu_process_utilization_per_second(upid JOINID(process.id))
RETURNS TABLE(ts TIMESTAMP, utilization DOUBLE, unnormalized_utilization DOUBLE)
AS
SELECT * FROM cpu_process_utilization_per_period(time_from_s(1), $upid);

CREATE PERFETTO TABLE cpu_cycles_per_process(
  upid JOINID(process.id),
  millicycles LONG,
  megacycles LONG,
  runtime DURATION,
  min_freq LONG,
  max_freq LONG,
  avg_freq LONG
) AS
SELECT
  t.upid,
  sum(c.millicycles) AS millicycles,
  CAST(sum(c.millicycles) / 1e9 AS INT) AS megacycles,
  sum(c.runtime) AS runtime,
  min(c.min_freq) AS min_freq,
  max(c.max_freq) AS max_freq,
  CAST(sum(c.millicycles) / (sum(c.runtime) / 1000) AS INT) AS avg_freq
FROM cpu_cycles_per_thread_per_cpu AS c
JOIN thread AS t USING (utid)
WHERE t.upid IS NOT NULL
GROUP BY t.upid;
