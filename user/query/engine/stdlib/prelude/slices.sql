-- The slice helpers upstream offers without an INCLUDE: the `slices` and
-- `instant` views, the table functions ancestor_slice(id) and
-- descendant_slice(id), and slice_is_ancestor(a, d). Upstream writes the
-- table functions in C++; these are SQL (descendant_slice's search in C++)
-- with the same rows, columns and order (tests/data/query/queries/
-- ps_prelude_*.sql check them against it).
--
-- Where they differ: upstream fails on an id no slice has and on an argument
-- that is not an integer; here both give no rows (SQL cannot raise an error
-- of its own), rather than comparing '5' or 5.0 equal to id 5. NULL gives no
-- rows in both.

-- `slice` under its other name.
CREATE PERFETTO VIEW slices(
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
  thread_dur DURATION,
  thread_instruction_count LONG,
  thread_instruction_delta LONG,
  cat STRING,
  slice_id JOINID(slice.id)
) AS
SELECT * FROM slice;

-- The slices of no duration (atrace `I`/`N` lines, ...). Unfinished slices
-- (dur -1) are not instants.
CREATE PERFETTO VIEW instant(
  ts TIMESTAMP,
  track_id JOINID(track.id),
  name STRING,
  arg_set_id ARGSETID
) AS
SELECT ts, track_id, name, arg_set_id FROM slice WHERE dur = 0;

-- The slices enclosing slice_id, outermost first, without slice_id itself.
-- The walk goes up parent_id, one id lookup per level; `hops` counts the
-- levels so that the outermost (reached last) comes out first.
CREATE PERFETTO FUNCTION ancestor_slice(slice_id LONG)
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
  thread_dur DURATION,
  thread_instruction_count LONG,
  thread_instruction_delta LONG
) AS
WITH RECURSIVE _up(up_id, hops) AS (
  SELECT parent_id, 1 FROM slice
  WHERE id = $slice_id AND typeof($slice_id) = 'integer' AND parent_id IS NOT NULL
  UNION ALL
  SELECT s.parent_id, _up.hops + 1
  FROM _up CROSS JOIN slice AS s ON s.id = _up.up_id
  WHERE s.parent_id IS NOT NULL
)
-- CROSS JOIN keeps _up outside: each ancestor is an id lookup, where the
-- planner's own choice scanned every slice per call.
SELECT
  s.id, s.ts, s.dur, s.track_id, s.category, s.name, s.depth, s.parent_id, s.arg_set_id,
  s.thread_ts, s.thread_dur, s.thread_instruction_count, s.thread_instruction_delta
FROM _up CROSS JOIN slice AS s ON s.id = _up.up_id
ORDER BY _up.hops DESC;

-- The slices nested in slice_id, in slice order (by id, which is by ts),
-- without slice_id itself: the ids come from C++
-- (engine/operators/slice_descendants.h, which says what nests), which
-- finds them by binary search on the slice's track instead of scanning it.
CREATE PERFETTO FUNCTION descendant_slice(slice_id LONG)
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
  thread_dur DURATION,
  thread_instruction_count LONG,
  thread_instruction_delta LONG
) AS
SELECT
  s.id, s.ts, s.dur, s.track_id, s.category, s.name, s.depth, s.parent_id, s.arg_set_id,
  s.thread_ts, s.thread_dur, s.thread_instruction_count, s.thread_instruction_delta
FROM __intrinsic_slice_descendants($slice_id) AS d CROSS JOIN slice AS s ON s.id = d.id
ORDER BY s.id;

-- Whether slice ancestor_id encloses slice descendant_id: same track,
-- shallower, starting no later and ending no earlier (an unfinished one,
-- dur -1, ends never). NULL when either id is no slice's.
CREATE PERFETTO FUNCTION slice_is_ancestor(ancestor_id LONG, descendant_id LONG)
RETURNS BOOL AS
SELECT
  a.track_id = d.track_id
  AND a.depth < d.depth
  AND a.ts <= d.ts
  AND IIF(a.dur = -1, 1, a.ts + a.dur >= d.ts + d.dur)
FROM slice AS a, slice AS d
WHERE a.id = $ancestor_id AND d.id = $descendant_id;
