-- Self-intersection of a set of intervals: interval_self_intersect!(t), t with
-- columns (id, ts, dur), cuts the time the intervals cover at every start and
-- end, and gives each piece with the intervals that cover it. Output rows are
-- (ts, dur, group_id, id, interval_ends_at_ts), in no defined order:
-- - for each piece of dur > 0, one row per interval covering it, with
--   interval_ends_at_ts 0; group_id numbers the pieces from 1 in time order;
-- - for each interval's end, one row (end ts, dur and group_id of the piece
--   starting there, the interval's id, 1). The last piece starts at the
--   latest end and has dur 0.
-- Upstream's other macros in this module (_interval_intersect! and friends)
-- are private, and not defined here.

CREATE PERFETTO MACRO interval_self_intersect(intervals TableOrSubquery)
RETURNS TableOrSubquery
AS (
  WITH
    _isi_intervals AS (SELECT id, ts, dur FROM $intervals),
    -- UNION, not UNION ALL: an interval listed twice ends once. Starts are
    -- here only to cut the pieces.
    _isi_points AS (
      SELECT id, ts, 1 AS is_start FROM _isi_intervals
      UNION
      SELECT id, ts + dur AS ts, 0 AS is_start FROM _isi_intervals
    ),
    _isi_pieces AS (
      SELECT
        row_number() OVER (ORDER BY ts) AS group_id,
        ts,
        ifnull(lead(ts) OVER (ORDER BY ts) - ts, 0) AS dur
      FROM (SELECT DISTINCT ts FROM _isi_points)
    )
  -- Pieces lie wholly inside or outside each interval (every boundary is a
  -- cut), so an overlapping piece is covered whole.
  SELECT p.ts, p.dur, p.group_id, i.id, 0 AS interval_ends_at_ts
  FROM _isi_pieces AS p
  JOIN _isi_intervals AS i ON p.ts < i.ts + i.dur AND p.ts + p.dur > i.ts
  WHERE p.dur > 0
  UNION ALL
  SELECT e.ts, p.dur, p.group_id, e.id, 1 AS interval_ends_at_ts
  FROM _isi_points AS e
  JOIN _isi_pieces AS p USING (ts)
  WHERE NOT e.is_start
);
