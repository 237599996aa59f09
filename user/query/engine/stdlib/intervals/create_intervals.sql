-- Intervals from two lists of timestamps: _interval_create!(starts, ends)
-- (tables with a ts column) pairs each start with the first end strictly
-- after it, giving (ts, dur) sorted by ts. Several starts may share one
-- end; a start repeated gives its interval again; a start with no end
-- after it gives none, as upstream's.

CREATE PERFETTO MACRO _interval_create(starts_table TableOrSubquery, ends_table TableOrSubquery)
RETURNS TableOrSubquery
AS (
  SELECT ts, dur
  FROM (
    SELECT
      ts, is_end,
      -- The first end after a start: ends sort before starts at one ts, so
      -- an end at the start's own ts is not "after" it. (Not FILTER:
      -- SQLite 3.40 ignores a FILTER on min() over a frame that looks
      -- forward.)
      min(iif(is_end, ts, NULL)) OVER (
        ORDER BY ts, is_end DESC ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) - ts AS dur
    FROM (
      SELECT ts, 0 AS is_end FROM $starts_table WHERE ts IS NOT NULL
      UNION ALL
      SELECT ts, 1 AS is_end FROM $ends_table WHERE ts IS NOT NULL
    )
  )
  WHERE NOT is_end AND dur IS NOT NULL
  ORDER BY ts
);
