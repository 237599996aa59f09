-- title: Longest slices
-- The 10 longest slices (atrace begin/end pairs, async slices, IRQs), with
-- the thread or process they belong to. A slice still open at the end of the
-- trace has dur -1 and is left out.
SELECT
  s.ts,
  round(s.dur / 1e6, 3) AS dur_ms,
  s.name,
  s.depth,
  coalesce(t.tid, p.pid) AS id,
  coalesce(t.name, p.name, tr.name) AS owner
FROM slice AS s
LEFT JOIN thread_track AS tt ON tt.id = s.track_id
LEFT JOIN thread AS t ON t.utid = tt.utid
LEFT JOIN process_track AS pt ON pt.id = s.track_id
LEFT JOIN process AS p ON p.upid = pt.upid
LEFT JOIN track AS tr ON tr.id = s.track_id
WHERE s.dur > 0
ORDER BY s.dur DESC
LIMIT 10;
