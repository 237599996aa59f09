-- title: Slices in the window
-- The first 20000 slices that overlap the window, with the thread or
-- process track they are on. dur is -1 for a slice still open at the end.
CREATE TEMP TABLE IF NOT EXISTS __report_window AS
SELECT trace_start() AS start_ts, trace_end() AS end_ts;

SELECT
  s.ts,
  s.dur,
  s.depth,
  s.name,
  s.track_id,
  coalesce(t.tid, p.pid) AS id,
  CASE WHEN t.utid IS NOT NULL THEN 'thread' WHEN p.upid IS NOT NULL THEN 'process' ELSE 'global' END AS kind,
  coalesce(t.name, p.name, '') AS owner,
  coalesce(tr.name, '') AS track
FROM slice AS s, __report_window AS w
LEFT JOIN thread_track AS tt ON tt.id = s.track_id
LEFT JOIN thread AS t ON t.utid = tt.utid
LEFT JOIN process_track AS pt ON pt.id = s.track_id
LEFT JOIN process AS p ON p.upid = pt.upid
LEFT JOIN track AS tr ON tr.id = s.track_id
WHERE s.ts < w.end_ts AND s.ts + max(s.dur, 0) >= w.start_ts
ORDER BY s.ts
LIMIT 20000;
