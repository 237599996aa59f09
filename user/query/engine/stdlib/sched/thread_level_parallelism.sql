-- How many threads were runnable (sched_runnable_thread_count), in
-- uninterruptible sleep (sched_uninterruptible_sleep_thread_count) and how many
-- CPUs ran a thread other than an idle one (sched_active_cpu_count) over time.
-- Each is a step function: (ts, count) sorted by ts, one row per ts where an
-- interval starts or ends, the count holding until the next row's ts. A state
-- or slice still open at the end of the trace (dur -1) counts until the end.
--
-- The counts are intervals_overlap_count! (intervals.overlap) written out:
-- sluice does not yet expand macros inside CREATE PERFETTO bodies.

-- +1 where an interval starts, -1 where it ends, summed per (kind, ts): one
-- pass over thread_state and sched for the three tables.
-- Runnable is exactly 'R': a preempted thread ('R+') does not count. A CPU is
-- active while it runs a thread that is not an idle (swapper) one.
CREATE PERFETTO TABLE _sched_parallelism_deltas AS
WITH
  intervals AS (
    SELECT state AS kind, ts, dur FROM thread_state WHERE state IN ('R', 'D')
    UNION ALL
    SELECT 'cpu' AS kind, ts, dur
    FROM sched
    WHERE utid NOT IN (SELECT utid FROM thread WHERE is_idle)
  )
SELECT kind, ts, sum(delta) AS delta
FROM (
  SELECT kind, ts, 1 AS delta FROM intervals
  UNION ALL
  SELECT kind, ts + dur AS ts, -1 AS delta FROM intervals WHERE dur != -1
)
GROUP BY kind, ts;

CREATE PERFETTO TABLE sched_runnable_thread_count(ts TIMESTAMP, runnable_thread_count LONG)
AS
SELECT ts, sum(delta) OVER (ORDER BY ts ROWS UNBOUNDED PRECEDING) AS runnable_thread_count
FROM _sched_parallelism_deltas
WHERE kind = 'R'
ORDER BY ts;

CREATE PERFETTO TABLE sched_uninterruptible_sleep_thread_count(
  ts TIMESTAMP,
  uninterruptible_sleep_thread_count LONG
)
AS
SELECT ts, sum(delta) OVER (ORDER BY ts ROWS UNBOUNDED PRECEDING) AS uninterruptible_sleep_thread_count
FROM _sched_parallelism_deltas
WHERE kind = 'D'
ORDER BY ts;

CREATE PERFETTO TABLE sched_active_cpu_count(ts TIMESTAMP, active_cpu_count LONG)
AS
SELECT ts, sum(delta) OVER (ORDER BY ts ROWS UNBOUNDED PRECEDING) AS active_cpu_count
FROM _sched_parallelism_deltas
WHERE kind = 'cpu'
ORDER BY ts;
