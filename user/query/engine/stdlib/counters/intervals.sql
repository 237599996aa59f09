-- Counter values as intervals: counter_leading_intervals!(t) turns rows
-- (id, ts, track_id, value) into (id, ts, dur, track_id, value, next_value,
-- delta_value), each value holding from its ts until the next kept row of its
-- track, the last one until trace_end().
--
-- Not every row is kept. Within a run of equal values on a track, the first
-- two rows survive; the rest are dropped except the run's last row, which
-- comes back when a different value follows it (a run that ends the track
-- loses its tail). So 10,10,10,10,20 keeps the 1st, 2nd, 4th and 5th rows.
-- This is what upstream's aggregate does, row by row: it drops a row whose two
-- predecessors among the kept rows both have its value, and re-adds the last
-- dropped one before the next kept row. Upstream marks "a dropped row is
-- waiting" by a non-zero ts, so a waiting row at ts 0 is never re-added; the
-- `ts != 0` below keeps that.
--
-- next_value is the next kept row's value (NULL on a track's last row);
-- delta_value is value minus the previous kept row's value (NULL on the
-- first), which is not next_value - value.

CREATE PERFETTO MACRO counter_leading_intervals(counter_table TableOrSubquery)
RETURNS TableOrSubquery
AS (
  SELECT
    id,
    ts,
    coalesce(lead(ts) OVER track_rows, trace_end()) - ts AS dur,
    track_id,
    value,
    lead(value) OVER track_rows AS next_value,
    value - lag(value) OVER track_rows AS delta_value
  FROM (
    SELECT id, ts, track_id, value
    FROM (
      SELECT
        id,
        ts,
        track_id,
        value,
        -- Consecutive equal values form a run, so a row is the 3rd or later
        -- of its run exactly when the two input rows before it equal it.
        coalesce(lag(value, 1) OVER input_rows = value AND lag(value, 2) OVER input_rows = value, 0)
          AS deep_in_run,
        coalesce(lead(value) OVER input_rows != value, 0) AS ends_run_before_change
      FROM (SELECT id, ts, track_id, CAST(value AS REAL) AS value FROM $counter_table)
      WINDOW input_rows AS (PARTITION BY track_id ORDER BY ts, id)
    )
    WHERE NOT deep_in_run OR (ends_run_before_change AND ts != 0)
  )
  WINDOW track_rows AS (PARTITION BY track_id ORDER BY ts, id)
);
