-- How many intervals overlap, as a step function: intervals_overlap_count!(t,
-- ts_col, dur_col) gives (ts, value), one row per time an interval starts or
-- ends, value being how many are open from that ts until the next row's.
-- intervals_overlap_count_by_group! does the same per group (ts, value,
-- group_name); interval_merge_overlapping! and
-- interval_merge_overlapping_partitioned! merge overlapping intervals.
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
