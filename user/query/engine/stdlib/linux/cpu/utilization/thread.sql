-- Per-thread CPU use: cpu_thread_utilization_per_second (and _per_period for
-- any period) for one thread, and the cycles each thread ran
-- (cpu_cycles_per_thread).
--
-- Utilization counts each of the thread's slices in the period it starts in,
-- up to that period's end, divided by the number of CPUs (highest sched CPU
-- number + 1); a slice still running at the end counts as -1 ns, as upstream.
--
-- Upstream's cpu_cycles_per_thread_in_interval and
-- cpu_thread_utilization_in_interval are not here: their awake_* columns need
-- to_monotonic(), which sluice lacks.

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
