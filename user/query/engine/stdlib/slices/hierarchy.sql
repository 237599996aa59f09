-- Slices with their relatives, for other modules: _slice_ancestor_and_self
-- and _slice_descendant_and_self are ancestor_slice and descendant_slice
-- with the slice itself in front; _slice_remove_nulls_and_reparent! keeps the
-- slices whose column is not NULL and hangs each under its nearest kept
-- ancestor.

CREATE PERFETTO FUNCTION _slice_ancestor_and_self(slice_id JOINID(slice.id))
RETURNS TABLE(
  id JOINID(slice.id),
  ts TIMESTAMP,
  dur DURATION,
  track_id JOINID(track.id),
  category STRING,
  name STRING,
  depth LONG,
  parent_id JOINID(slice.id),
  arg_set_id ARGSETID,
  thread_ts TIMESTAMP,
  thread_dur LONG
)
AS
SELECT id, ts, dur, track_id, category, name, depth, parent_id, arg_set_id, thread_ts, thread_dur
FROM slice
WHERE id = $slice_id
UNION ALL
SELECT id, ts, dur, track_id, category, name, depth, parent_id, arg_set_id, thread_ts, thread_dur
FROM ancestor_slice($slice_id);

CREATE PERFETTO FUNCTION _slice_descendant_and_self(slice_id JOINID(slice.id))
RETURNS TABLE(
  id JOINID(slice.id),
  ts TIMESTAMP,
  dur DURATION,
  track_id JOINID(track.id),
  category STRING,
  name STRING,
  depth LONG,
  parent_id JOINID(slice.id),
  arg_set_id ARGSETID,
  thread_ts TIMESTAMP,
  thread_dur LONG
)
AS
SELECT id, ts, dur, track_id, category, name, depth, parent_id, arg_set_id, thread_ts, thread_dur
FROM slice
WHERE id = $slice_id
UNION ALL
SELECT id, ts, dur, track_id, category, name, depth, parent_id, arg_set_id, thread_ts, thread_dur
FROM descendant_slice($slice_id);

-- `slice_table` (columns id, parent_id, depth and `column_name`) without its
-- rows whose column is NULL, as (id, parent_id, depth, column_name). A kept
-- slice at depth 0 stays as it is; any other gets as parent_id its deepest
-- kept ancestor and as depth that ancestor's depth (upstream's numbers: not
-- the ancestor's depth plus one). One with no kept ancestor at all gets its
-- outermost ancestor (kept or not) and depth 0, as upstream's answer has it.
CREATE PERFETTO MACRO _slice_remove_nulls_and_reparent(slice_table TableOrSubQuery, column_name ColumnName)
RETURNS TableOrSubQuery
AS (
  WITH
    _kept AS (SELECT * FROM $slice_table WHERE $column_name IS NOT NULL),
    _candidates AS (
      -- Each kept non-root slice with every ancestor: the ancestor's depth
      -- if it is kept, else 0, and its place in ancestor_slice's order.
      SELECT
        child.id AS child_id,
        anc.id AS ancestor_id,
        iif(kept_anc.id IS NULL, 0, anc.depth) AS rank_depth,
        anc.depth AS ancestor_depth
      FROM _kept AS child, ancestor_slice(child.id) AS anc
      LEFT JOIN _kept AS kept_anc ON kept_anc.id = anc.id
    ),
    _chosen AS (
      -- The deepest kept ancestor; among ties (none kept: all 0) the
      -- outermost.
      SELECT child_id, ancestor_id, rank_depth
      FROM (
        SELECT
          child_id,
          ancestor_id,
          rank_depth,
          row_number() OVER (PARTITION BY child_id ORDER BY rank_depth DESC, ancestor_depth) AS pick
        FROM _candidates
      )
      WHERE pick = 1
    )
  SELECT id, parent_id, depth, $column_name
  FROM _kept
  WHERE depth = 0
  UNION ALL
  SELECT k.id, c.ancestor_id AS parent_id, c.rank_depth AS depth, k.$column_name
  FROM _kept AS k
  JOIN _chosen AS c ON c.child_id = k.id
);
