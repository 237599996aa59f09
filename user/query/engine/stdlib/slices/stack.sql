-- Slices by stack: slice_with_stack_id is `slice` with each slice's stack_id
-- (a hash of its own and its ancestors' category|name) and its parent's
-- (parent_stack_id, 0 for a root); ancestor_slice_by_stack(stack_id) and
-- descendant_slice_by_stack(stack_id) give the ancestors, or descendants,
-- of every slice with that stack, themselves included, once each, by ts.
--
-- The ids are upstream's: HASH of the '|'-joined HASHes of each
-- "category|name" (an empty category for none), the slice's own first and
-- then its ancestors' from the root down, as upstream's query concatenates
-- them.

INCLUDE PERFETTO MODULE slices.hierarchy;

-- Each slice's own frame hash and its ancestors' hashes joined from the
-- root down ('' for a root), walked down from the roots.
CREATE PERFETTO TABLE _slice_stack_hash AS
WITH RECURSIVE _down(id, own, ancestors) AS (
  SELECT id, hash(coalesce(category, '') || '|' || name), ''
  FROM slice WHERE parent_id IS NULL
  UNION ALL
  SELECT s.id, hash(coalesce(s.category, '') || '|' || s.name),
    iif(_down.ancestors = '', CAST(_down.own AS TEXT), _down.ancestors || '|' || _down.own)
  FROM _down JOIN slice AS s ON s.parent_id = _down.id
)
SELECT id, hash(CAST(own AS TEXT) || iif(ancestors = '', '', '|' || ancestors)) AS stack_hash
FROM _down
ORDER BY id;

CREATE PERFETTO VIEW slice_with_stack_id(
  id LONG,
  ts TIMESTAMP,
  dur DURATION,
  track_id JOINID(track.id),
  category STRING,
  name STRING,
  depth LONG,
  parent_id JOINID(slice.id),
  arg_set_id ARGSETID,
  thread_ts TIMESTAMP,
  thread_dur LONG,
  thread_instruction_count LONG,
  thread_instruction_delta LONG,
  stack_id LONG,
  parent_stack_id LONG
) AS
SELECT
  s.id, s.ts, s.dur, s.track_id, s.category, s.name, s.depth, s.parent_id, s.arg_set_id,
  s.thread_ts, s.thread_dur, s.thread_instruction_count, s.thread_instruction_delta,
  h.stack_hash AS stack_id, coalesce(p.stack_hash, 0) AS parent_stack_id
FROM slice AS s
JOIN _slice_stack_hash AS h USING (id)
LEFT JOIN _slice_stack_hash AS p ON p.id = s.parent_id;

CREATE PERFETTO FUNCTION ancestor_slice_by_stack(stack_hash LONG)
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
) AS
SELECT DISTINCT a.id, a.ts, a.dur, a.track_id, a.category, a.name, a.depth, a.parent_id, a.arg_set_id,
  a.thread_ts, a.thread_dur
FROM _slice_stack_hash AS h
JOIN _slice_ancestor_and_self(h.id) AS a
WHERE h.stack_hash = $stack_hash
ORDER BY a.ts;

CREATE PERFETTO FUNCTION descendant_slice_by_stack(stack_hash LONG)
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
) AS
SELECT DISTINCT d.id, d.ts, d.dur, d.track_id, d.category, d.name, d.depth, d.parent_id, d.arg_set_id,
  d.thread_ts, d.thread_dur
FROM _slice_stack_hash AS h
JOIN _slice_descendant_and_self(h.id) AS d
WHERE h.stack_hash = $stack_hash
ORDER BY d.ts;
