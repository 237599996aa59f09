-- Per-process CPU use: cpu_process_utilization_per_second (and _per_period
-- for any period) for one process, the cycles each process ran
-- (cpu_cycles_per_process, cpu_cycles_per_process_in_interval), and each
-- process's share of an interval's awake time
-- (cpu_process_utilization_in_interval).
--
-- Utilization sums the process's non-idle threads' slices, each in the period
-- it starts in, up to that period's end, divided by the number of CPUs
-- (highest sched CPU number + 1); a slice still running at the end counts as
-- -1 ns, as upstream. Threads without a process count for no process.
--
-- Awake time as in linux.cpu.utilization.system: to_monotonic() of each
-- piece's ends, NULL without clock snapshots. In
-- cpu_cycles_per_process_in_interval the threads of no known process are
-- one row of upid NULL, as upstream's.

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

-- The cycles each process's threads ran within [ts, ts + dur), with their
-- awake time.
CREATE PERFETTO FUNCTION cpu_cycles_per_process_in_interval(ts TIMESTAMP, dur LONG)
RETURNS TABLE(
  upid JOINID(process.id),
  millicycles LONG,
  megacycles LONG,
  runtime DURATION,
  awake_runtime DURATION,
  min_freq LONG,
  max_freq LONG,
  avg_freq LONG
) AS
SELECT
  t.upid,
  CAST(sum(ii.dur * f.freq / 1000) AS INT) AS millicycles,
  CAST(sum(ii.dur * f.freq / 1000) / 1e9 AS INT) AS megacycles,
  sum(ii.dur) AS runtime,
  sum(to_monotonic(ii.ts + ii.dur) - to_monotonic(ii.ts)) AS awake_runtime,
  min(f.freq) AS min_freq,
  max(f.freq) AS max_freq,
  CAST(sum(ii.dur * f.freq / 1000) / (sum(CASE WHEN f.freq IS NOT NULL THEN ii.dur END) / 1000) AS INT) AS avg_freq
FROM _cpu_freq_per_thread_in_interval($ts, $dur) AS ii
JOIN _cpu_freq_per_thread AS f USING (id)
JOIN thread AS t USING (utid)
GROUP BY t.upid;

-- Each process's share of [ts, ts + dur)'s awake time, in percent over all
-- CPUs and unnormalized, rounded to 6 places as upstream.
CREATE PERFETTO FUNCTION cpu_process_utilization_in_interval(ts TIMESTAMP, dur LONG)
RETURNS TABLE(
  upid JOINID(process.id),
  process_name STRING,
  awake_dur LONG,
  awake_utilization DOUBLE,
  awake_unnormalized_utilization DOUBLE
) AS
WITH awake AS (SELECT to_monotonic($ts + $dur) - to_monotonic($ts) AS span)
SELECT
  c.upid,
  p.name AS process_name,
  c.awake_runtime AS awake_dur,
  round(c.awake_runtime * 100.0 / awake.span / (SELECT max(cpu) + 1 FROM cpu), 6) AS awake_utilization,
  round(c.awake_runtime * 100.0 / awake.span, 6) AS awake_unnormalized_utilization
FROM cpu_cycles_per_process_in_interval($ts, $dur) AS c
JOIN process AS p USING (upid), awake;
