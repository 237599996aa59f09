-- Thread slices flattened: _slice_flattened cuts each finished top-level
-- thread slice (and everything nested in it) into pieces that do not
-- overlap, each piece the deepest slice running then (its self time), with
-- the slice's depth, name, root and thread and process. For other modules
-- (upstream's is private too).
--
-- Per root, the pieces run from one event to the next, the events being the
-- starts of its descendants (the piece is the starting slice's) and their
-- ends (the piece is the ended slice's parent's). At one timestamp a start
-- wins over an end, and of several starts or several ends the first slice
-- (lowest id: the outermost) wins, which is the row upstream's grouping
-- keeps. A root's time before its first event and after its last event are
-- pieces of the root, even when empty, as upstream gives them; a root with
-- nothing nested of positive duration is one piece. Instants, unfinished
-- slices and their subtrees have no pieces.

INCLUDE PERFETTO MODULE slices.with_context;

CREATE PERFETTO TABLE _slice_flat_root AS
SELECT id AS root_id, ts AS root_ts, dur AS root_dur
FROM slice
WHERE parent_id IS NULL AND dur > 0;

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
SELECT c.id, c.ts, c.dur, c.parent_id, r.root_id
FROM _up
JOIN _slice_flat_root AS r ON r.root_id = _up.ancestor
JOIN slice AS c ON c.id = _up.id;

CREATE PERFETTO TABLE _slice_flat_piece AS
WITH
  _event AS (
    SELECT root_id, ts, 1 AS is_start, id AS piece_id, id AS slice_id FROM _slice_flat_child
    UNION ALL
    SELECT root_id, ts + dur, 0, parent_id, id FROM _slice_flat_child
  ),
  _kept AS (
    SELECT root_id, ts, piece_id
    FROM (
      SELECT *, row_number() OVER (PARTITION BY root_id, ts ORDER BY is_start DESC, slice_id) AS rank
      FROM _event
    )
    WHERE rank = 1
  ),
  _middle AS (
    SELECT root_id, piece_id AS id, ts, lead(ts) OVER (PARTITION BY root_id ORDER BY ts) - ts AS dur
    FROM _kept
  ),
  _bounds AS (
    SELECT root_id, min(ts) AS first_ts, max(ts) AS last_ts FROM _kept GROUP BY root_id
  )
SELECT root_id, id, ts, dur FROM _middle WHERE dur IS NOT NULL
UNION ALL
SELECT r.root_id, r.root_id, r.root_ts, b.first_ts - r.root_ts
FROM _bounds AS b JOIN _slice_flat_root AS r USING (root_id)
UNION ALL
SELECT r.root_id, r.root_id, b.last_ts, r.root_ts + r.root_dur - b.last_ts
FROM _bounds AS b JOIN _slice_flat_root AS r USING (root_id)
UNION ALL
SELECT r.root_id, r.root_id, r.root_ts, r.root_dur
FROM _slice_flat_root AS r
WHERE r.root_id NOT IN (SELECT root_id FROM _bounds);

CREATE PERFETTO TABLE _slice_flattened AS
SELECT
  p.id AS slice_id, p.ts, p.dur, s.depth, s.name, p.root_id, s.track_id,
  s.utid, s.tid, s.thread_name, s.upid, s.pid, s.process_name
FROM _slice_flat_piece AS p
JOIN thread_slice AS s ON s.id = p.id;

CREATE PERFETTO INDEX _slice_flattened_id_idx ON _slice_flattened(slice_id);
CREATE PERFETTO INDEX _slice_flattened_ts_idx ON _slice_flattened(ts);
