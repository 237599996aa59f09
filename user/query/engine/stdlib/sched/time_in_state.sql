-- Time each thread spent in each scheduling state: per thread over the whole
-- trace (sched_time_in_state_for_thread, sched_percentage_of_time_in_state),
-- and for one thread or one CPU within an interval (the
-- sched_time_in_state_*_in_interval functions).
--
-- Whole-trace sums take every thread_state row as upstream does, an
-- unfinished one (dur -1) included: each takes 1 ns off its thread's sums.
-- Percentages are integers, rounded down.

CREATE PERFETTO TABLE sched_time_in_state_for_thread(
  utid JOINID(thread.id),
  total_runtime LONG,
  state STRING,
  time_in_state LONG,
  percentage_in_state LONG
)
AS
-- The per-state sums are sluice_thread_state_time's (one pass in C++, where
-- SQLite's GROUP BY sorted every thread_state row); a thread's total is the
-- sum of its per-state sums (integers: exact).
WITH
  s AS MATERIALIZED (SELECT utid, state, dur AS time_in_state FROM sluice_thread_state_time),
  t AS (SELECT utid, sum(time_in_state) AS total_runtime FROM s GROUP BY utid)
SELECT
  s.utid,
  t.total_runtime,
  s.state,
  s.time_in_state,
  s.time_in_state * 100 / t.total_runtime AS percentage_in_state
FROM s
JOIN t USING (utid);

-- One row per thread: the percentage of its time in Running, R, R+, S and D
-- (NULL for a state it never was in), and in all the other one-letter states
-- together.
CREATE PERFETTO TABLE sched_percentage_of_time_in_state(
  utid JOINID(thread.id),
  running LONG,
  runnable LONG,
  runnable_preempted LONG,
  sleeping LONG,
  uninterruptible_sleep LONG,
  other LONG
)
AS
SELECT
  utid,
  max(iif(state = 'Running', percentage_in_state, NULL)) AS running,
  max(iif(state = 'R', percentage_in_state, NULL)) AS runnable,
  max(iif(state = 'R+', percentage_in_state, NULL)) AS runnable_preempted,
  max(iif(state = 'S', percentage_in_state, NULL)) AS sleeping,
  max(iif(state = 'D', percentage_in_state, NULL)) AS uninterruptible_sleep,
  -- The other states' times are summed before the division, not their
  -- rounded percentages. Multi-letter states ('DK') count nowhere.
  sum(iif(state IN ('T', 't', 'X', 'Z', 'x', 'I', 'K', 'W', 'P', 'N'), time_in_state, NULL)) * 100
    / total_runtime AS other
FROM sched_time_in_state_for_thread
GROUP BY utid;


-- The part of [ts, ts + dur) that each of a thread's states (dur > 0) covers
-- (dur 0 where one of them has dur 0).
CREATE PERFETTO FUNCTION _sched_thread_states_in_interval(ts TIMESTAMP, dur DURATION, utid JOINID(thread.id))
RETURNS TABLE(id LONG, dur DURATION)
AS
SELECT id, min(ts + dur, $ts + $dur) - max(ts, $ts) AS dur
FROM thread_state
WHERE utid = $utid
  AND dur > 0
  AND CASE
    -- Upstream's interval intersection: touching is not overlapping, and an
    -- interval of dur 0 overlaps one that holds at its ts.
    WHEN $dur = 0 AND dur = 0 THEN ts = $ts
    WHEN $dur = 0 THEN ts <= $ts AND $ts < ts + dur
    WHEN dur = 0 THEN $ts <= ts AND ts < $ts + $dur
    ELSE ts < $ts + $dur AND ts + dur > $ts
  END;

-- A thread's time in [ts, ts + dur) per (state, io_wait, blocked_function),
-- longest first. blocked_function is declared LONG, as upstream's, but holds
-- the function's name.
CREATE PERFETTO FUNCTION sched_time_in_state_for_thread_in_interval(
  ts TIMESTAMP,
  dur DURATION,
  utid JOINID(thread.id)
)
RETURNS TABLE(state STRING, io_wait BOOL, blocked_function LONG, dur DURATION)
AS
SELECT s.state, s.io_wait, s.blocked_function, sum(c.dur) AS dur
FROM _sched_thread_states_in_interval($ts, $dur, $utid) AS c
JOIN thread_state AS s USING (id)
GROUP BY s.state, s.io_wait, s.blocked_function
ORDER BY dur DESC;

-- The same per (state, io_wait, cpu, blocked_function).
CREATE PERFETTO FUNCTION sched_time_in_state_and_cpu_for_thread_in_interval(
  ts TIMESTAMP,
  dur DURATION,
  utid JOINID(thread.id)
)
RETURNS TABLE(state STRING, io_wait BOOL, cpu LONG, blocked_function LONG, dur DURATION)
AS
SELECT s.state, s.io_wait, s.cpu, s.blocked_function, sum(c.dur) AS dur
FROM _sched_thread_states_in_interval($ts, $dur, $utid) AS c
JOIN thread_state AS s USING (id)
GROUP BY s.state, s.io_wait, s.cpu, s.blocked_function
ORDER BY dur DESC;

-- A CPU's time in [ts, ts + dur) per end_state of the sched slices that ran
-- there, swapper's included; slices still running at the end (dur -1) are
-- left out. No defined order.
CREATE PERFETTO FUNCTION sched_time_in_state_for_cpu_in_interval(cpu LONG, ts TIMESTAMP, dur LONG)
RETURNS TABLE(end_state STRING, dur LONG)
AS
SELECT end_state, sum(min(ts + dur, $ts + $dur) - max(ts, $ts)) AS dur
FROM sched
WHERE cpu = $cpu
  AND dur != -1
  AND CASE
    -- Upstream's interval intersection: touching is not overlapping, and an
    -- interval of dur 0 overlaps one that holds at its ts.
    WHEN $dur = 0 AND dur = 0 THEN ts = $ts
    WHEN $dur = 0 THEN ts <= $ts AND $ts < ts + dur
    WHEN dur = 0 THEN $ts <= ts AND ts < $ts + $dur
    ELSE ts < $ts + $dur AND ts + dur > $ts
  END
GROUP BY end_state;
