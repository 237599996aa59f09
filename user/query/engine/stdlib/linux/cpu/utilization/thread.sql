-- Per-thread CPU use: cpu_thread_utilization_per_second (and _per_period for
-- any period) for one thread, the cycles each thread ran
-- (cpu_cycles_per_thread, cpu_cycles_per_thread_in_interval), and each
-- thread's share of an interval's awake time
-- (cpu_thread_utilization_in_interval).
--
-- Utilization counts each of the thread's slices in the period it starts in,
-- up to that period's end, divided by the number of CPUs (highest sched CPU
-- number + 1); a slice still running at the end counts as -1 ns, as upstream.
--
-- Awake time as in linux.cpu.utilization.system: to_monotonic() of each
-- piece's ends, NULL without clock snapshots.

INCLUDE PERFETTO MODULE linux.cpu.utilization.general;
INCLUDE PERFETTO MODULE linux.cpu.utilization.thread_cpu;
INCLUDE PERFETTO MODULE time.conversion;

CREATE PERFETTO FUNCTION cpu_thread_utilization_per_period(interval LONG, utid JOINID(thread.id))
RETURNS TABLE(ts TIMESTAMP, utilization DOUBLE, unnormalized_utilization DOUBLE)
AS
SELECT *
FROM _cpu_avg_utilization_per_period!($interval, (
  SELECT ts, ts + dur AS ts_end FROM sched WHERE utid = $utid
));

CREATE PERFETTO FUNCTION cpu_thread_utilization_per_second(utid JOINID(thread.id))
RETURNS TABLE(ts TIMESTAMP, utilization DOUBLE, unnormalized_utilization DOUBLE)
AS
SELECT * FROM cpu_thread_utilization_per_period(time_from_s(1), $utid);

CREATE PERFETTO TABLE cpu_cycles_per_thread(
  utid JOINID(thread.id),
  millicycles LONG,
  megacycles LONG,
  runtime DURATION,
  min_freq LONG,
  max_freq LONG,
  avg_freq LONG
) AS
SELECT
  utid,
  sum(millicycles) AS millicycles,
  CAST(sum(millicycles) / 1e9 AS INT) AS megacycles,
  sum(runtime) AS runtime,
  min(min_freq) AS min_freq,
  max(max_freq) AS max_freq,
  CAST(sum(millicycles) / (sum(runtime) / 1000) AS INT) AS avg_freq
FROM cpu_cycles_per_thread_per_cpu
GROUP BY utid;

-- The cycles each thread ran within [ts, ts + dur), with their awake time.
CREATE PERFETTO FUNCTION cpu_cycles_per_thread_in_interval(ts TIMESTAMP, dur LONG)
RETURNS TABLE(
  utid JOINID(thread.id),
  millicycles LONG,
  megacycles LONG,
  runtime DURATION,
  awake_runtime DURATION,
  min_freq LONG,
  max_freq LONG,
  avg_freq LONG
) AS
SELECT
  f.utid,
  CAST(sum(ii.dur * f.freq / 1000) AS INT) AS millicycles,
  CAST(sum(ii.dur * f.freq / 1000) / 1e9 AS INT) AS megacycles,
  sum(ii.dur) AS runtime,
  sum(to_monotonic(ii.ts + ii.dur) - to_monotonic(ii.ts)) AS awake_runtime,
  min(f.freq) AS min_freq,
  max(f.freq) AS max_freq,
  CAST(sum(ii.dur * f.freq / 1000) / (sum(CASE WHEN f.freq IS NOT NULL THEN ii.dur END) / 1000) AS INT) AS avg_freq
FROM _cpu_freq_per_thread_in_interval($ts, $dur) AS ii
JOIN _cpu_freq_per_thread AS f USING (id)
GROUP BY f.utid;

-- Each thread's share of [ts, ts + dur)'s awake time, in percent over all
-- CPUs and unnormalized, rounded to 6 places as upstream.
CREATE PERFETTO FUNCTION cpu_thread_utilization_in_interval(ts TIMESTAMP, dur LONG)
RETURNS TABLE(
  upid JOINID(process.id),
  utid JOINID(thread.id),
  thread_name STRING,
  awake_dur LONG,
  awake_utilization DOUBLE,
  awake_unnormalized_utilization DOUBLE
) AS
WITH awake AS (SELECT to_monotonic($ts + $dur) - to_monotonic($ts) AS span)
SELECT
  t.upid,
  c.utid,
  t.name AS thread_name,
  c.awake_runtime AS awake_dur,
  round(c.awake_runtime * 100.0 / awake.span / (SELECT max(cpu) + 1 FROM cpu), 6) AS awake_utilization,
  round(c.awake_runtime * 100.0 / awake.span, 6) AS awake_unnormalized_utilization
FROM cpu_cycles_per_thread_in_interval($ts, $dur) AS c
JOIN thread AS t USING (utid), awake;
