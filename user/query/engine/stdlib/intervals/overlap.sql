-- How many intervals overlap, as a step function: intervals_overlap_count!(t,
-- ts_col, dur_col) gives (ts, value), one row per time an interval starts or
-- ends, value being how many are open from that ts until the next row's.
-- intervals_overlap_count_by_group! does the same per group (ts, value,
-- group_name); interval_merge_overlapping! and
-- interval_merge_overlapping_partitioned! merge overlapping intervals.
-- For other modules, _intervals_merge_root_and_children! and
-- _intervals_flatten! cut a hierarchy of intervals into the pieces where
-- each is the deepest one running (below).
--
-- An interval with dur -1 (still open when the trace ended) starts and never
-- ends. A ts where as many intervals end as start keeps its row, with the
-- value unchanged. Rows come sorted by ts.

CREATE PERFETTO MACRO intervals_overlap_count(
  segments TableOrSubquery,
  ts_column ColumnName,
  dur_column ColumnName
)
RETURNS TableOrSubquery
AS (
  SELECT ts, sum(delta) OVER (ORDER BY ts ROWS UNBOUNDED PRECEDING) AS value
  FROM (
    SELECT ts, sum(delta) AS delta
    FROM (
      SELECT $ts_column AS ts, 1 AS delta FROM $segments
      UNION ALL
      SELECT $ts_column + $dur_column AS ts, -1 AS delta FROM $segments WHERE $dur_column != -1
    )
    GROUP BY ts
  )
  ORDER BY ts
);

-- The count of each value of group_column on its own; the rows of all groups
-- come together, sorted by ts only.
CREATE PERFETTO MACRO intervals_overlap_count_by_group(
  segments TableOrSubquery,
  ts_column ColumnName,
  dur_column ColumnName,
  group_column ColumnName
)
RETURNS TableOrSubquery
AS (
  SELECT
    ts,
    sum(delta) OVER (PARTITION BY group_name ORDER BY ts ROWS UNBOUNDED PRECEDING) AS value,
    group_name
  FROM (
    SELECT ts, sum(delta) AS delta, group_name
    FROM (
      SELECT $ts_column AS ts, 1 AS delta, $group_column AS group_name FROM $segments
      UNION ALL
      SELECT $ts_column + $dur_column AS ts, -1 AS delta, $group_column AS group_name
      FROM $segments
      WHERE $dur_column != -1
    )
    GROUP BY ts, group_name
  )
  ORDER BY ts
);

-- (ts, dur) of the unions of intervals (columns ts, dur) that overlap or lie
-- at most epsilon apart. Each interval is stretched by epsilon; a merged
-- interval runs from where the count leaves 0 to where it comes back to 0,
-- less epsilon. Intervals that only touch merge too (their -1 and +1 cancel).
CREATE PERFETTO MACRO interval_merge_overlapping(intervals TableOrSubquery, epsilon Expr)
RETURNS TableOrSubquery
AS (
  SELECT prev_ts AS ts, end_ts - prev_ts AS dur
  FROM (
    -- prev_ts is the previous turning point's own ts: a merged interval
    -- starts where the count left 0.
    SELECT
      ts - iif(value = 0, $epsilon, 0) AS end_ts,
      value,
      lag(ts) OVER (ORDER BY ts) AS prev_ts
    FROM (
      -- The turning points: where the count leaves 0 or comes back to it.
      SELECT ts, value
      FROM (
        SELECT ts, value, lag(value, 1, 0) OVER (ORDER BY ts) AS prev_value
        FROM intervals_overlap_count!($intervals, ts, (dur + $epsilon))
      )
      WHERE prev_value = 0 OR value = 0
    )
  )
  WHERE value = 0
);

-- (ts, dur, partition column) of the unions of overlapping or touching
-- intervals (columns ts, dur; dur < 0 left out) with the same value of the
-- partition column, given in parentheses: (cpu). Unlike upstream, it takes
-- one partition column only: plain SQL cannot unpack a list of them.
CREATE PERFETTO MACRO interval_merge_overlapping_partitioned(
  intervals TableOrSubquery,
  partition_columns ColumnNameList
)
RETURNS TableOrSubquery
AS (
  SELECT min(ts) AS ts, max(ts + dur) - min(ts) AS dur, $partition_columns
  FROM (
    -- A row opens a new group when it starts after every earlier row of its
    -- partition has ended (the first row of a partition always does).
    SELECT
      ts,
      dur,
      $partition_columns,
      sum(coalesce(ts > furthest_end, 1)) OVER (PARTITION BY $partition_columns ORDER BY ts) AS group_number
    FROM (
      SELECT
        ts,
        dur,
        $partition_columns,
        max(ts + dur) OVER (
          PARTITION BY $partition_columns ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ) AS furthest_end
      FROM $intervals
      WHERE dur >= 0
    )
  )
  GROUP BY $partition_columns, group_number
);

-- Roots (id, ts, dur) and their descendants (root_id, id, parent_id, ts,
-- dur) as the rows _intervals_flatten! reads: each descendant with its
-- root's ts and dur, and a row of NULLs for a root with no descendant.
-- Intervals of dur 0 or less are left out; a root has descendants when some
-- row names it as parent.
CREATE PERFETTO MACRO _intervals_merge_root_and_children(
  roots_table TableOrSubquery,
  children_table TableOrSubquery
)
RETURNS TableOrSubquery
AS (
  WITH
    _mrc_root AS (SELECT id AS root_id, ts AS root_ts, dur AS root_dur FROM $roots_table WHERE dur > 0),
    _mrc_child AS (SELECT * FROM $children_table WHERE dur > 0)
  SELECT r.root_id, r.root_ts, r.root_dur, c.id, c.parent_id, c.ts, c.dur
  FROM _mrc_child AS c
  JOIN _mrc_root AS r USING (root_id)
  UNION ALL
  SELECT r.root_id, r.root_ts, r.root_dur, NULL, NULL, NULL, NULL
  FROM _mrc_root AS r
  WHERE r.root_id NOT IN (SELECT parent_id FROM _mrc_child WHERE parent_id IS NOT NULL)
);

-- The pieces of each root's time (root_id, id, ts, dur) where one interval
-- is the deepest running, from rows (root_id, root_ts, root_dur, id,
-- parent_id, ts, dur) as _intervals_merge_root_and_children! gives them.
--
-- Per root the pieces run from one event to the next: an interval's start
-- (the piece is that interval's) or its end (the piece is its parent's, or
-- the root's for a top child). At one timestamp a start wins over an end,
-- and of several the first row given wins, as upstream's grouping keeps it.
-- A root's time before its first event and after its last are pieces of
-- the root, even when empty, as upstream gives them; a root with no
-- children (its row's id NULL) is one piece.
CREATE PERFETTO MACRO _intervals_flatten(children_with_roots_table TableOrSubquery)
RETURNS TableOrSubquery
AS (
  WITH
    _fl_row AS (
      SELECT *, row_number() OVER () AS _fl_order
      FROM $children_with_roots_table
      WHERE root_dur > 0 AND (dur IS NULL OR dur > 0)
    ),
    _fl_event AS (
      SELECT root_id, ts, 1 AS is_start, id AS piece_id, _fl_order FROM _fl_row WHERE id IS NOT NULL
      UNION ALL
      SELECT root_id, ts + dur, 0, coalesce(parent_id, root_id), _fl_order FROM _fl_row WHERE id IS NOT NULL
    ),
    _fl_kept AS (
      SELECT root_id, ts, piece_id
      FROM (
        SELECT *, row_number() OVER (PARTITION BY root_id, ts ORDER BY is_start DESC, _fl_order) AS _fl_rank
        FROM _fl_event
      )
      WHERE _fl_rank = 1
    ),
    _fl_middle AS (
      SELECT root_id, piece_id AS id, ts, lead(ts) OVER (PARTITION BY root_id ORDER BY ts) - ts AS dur
      FROM _fl_kept
    ),
    _fl_root AS (
      SELECT DISTINCT root_id, root_ts, root_dur FROM _fl_row
    ),
    _fl_bounds AS (
      SELECT root_id, min(ts) AS first_ts, max(ts) AS last_ts FROM _fl_kept GROUP BY root_id
    )
  SELECT root_id, id, ts, dur FROM _fl_middle WHERE dur IS NOT NULL
  UNION ALL
  SELECT r.root_id, r.root_id, r.root_ts, b.first_ts - r.root_ts
  FROM _fl_bounds AS b JOIN _fl_root AS r USING (root_id)
  UNION ALL
  SELECT r.root_id, r.root_id, b.last_ts, r.root_ts + r.root_dur - b.last_ts
  FROM _fl_bounds AS b JOIN _fl_root AS r USING (root_id)
  UNION ALL
  SELECT root_id, root_id, root_ts, root_dur
  FROM _fl_row
  WHERE id IS NULL
  GROUP BY root_id
);
