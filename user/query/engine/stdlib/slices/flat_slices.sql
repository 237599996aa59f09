-- Thread slices flattened: _slice_flattened cuts each finished top-level
-- thread slice (and everything nested in it) into pieces that do not
-- overlap, each piece the deepest slice running then (its self time), with
-- the slice's depth, name, root and thread and process. For other modules
-- (upstream's is private too).
--
-- The pieces come from intervals.overlap's _intervals_flatten! over the
-- roots and their descendants, given in slice id order: at one timestamp
-- a start wins over an end, and of several the outermost slice (lowest
-- id) wins. A root's time before its first nested slice and after its last
-- are pieces of the root, even when empty, as upstream gives them; a root
-- with nothing nested of positive duration is one piece. Instants,
-- unfinished slices and their subtrees have no pieces.

INCLUDE PERFETTO MODULE intervals.overlap;
INCLUDE PERFETTO MODULE slices.with_context;

-- Every finished nested slice of positive duration with its root: the walk
-- up from each such slice ends at the root (each step an id lookup).
CREATE PERFETTO TABLE _slice_flat_child AS
WITH RECURSIVE _up(id, ancestor) AS (
  SELECT id, parent_id FROM slice WHERE parent_id IS NOT NULL AND dur > 0
  UNION ALL
  SELECT _up.id, s.parent_id
  FROM _up CROSS JOIN slice AS s ON s.id = _up.ancestor
  WHERE s.parent_id IS NOT NULL
)
SELECT _up.ancestor AS root_id, c.id, c.parent_id, c.ts, c.dur
FROM _up
JOIN slice AS root ON root.id = _up.ancestor AND root.parent_id IS NULL
JOIN slice AS c ON c.id = _up.id
ORDER BY c.id;

CREATE PERFETTO TABLE _slice_flattened AS
SELECT
  p.id AS slice_id, p.ts, p.dur, s.depth, s.name, p.root_id, s.track_id,
  s.utid, s.tid, s.thread_name, s.upid, s.pid, s.process_name
FROM _intervals_flatten!(_intervals_merge_root_and_children!(
  (SELECT id, ts, dur FROM slice WHERE parent_id IS NULL), _slice_flat_child)) AS p
JOIN thread_slice AS s ON s.id = p.id;

CREATE PERFETTO INDEX _slice_flattened_id_idx ON _slice_flattened(slice_id);
CREATE PERFETTO INDEX _slice_flattened_ts_idx ON _slice_flattened(ts);
