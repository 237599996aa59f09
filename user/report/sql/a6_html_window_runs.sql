-- title: CPU runs in the window
-- The first 20000 runs (sched slices, idle left out) that overlap the window.
CREATE TEMP TABLE IF NOT EXISTS __report_window AS
SELECT trace_start() AS start_ts, trace_end() AS end_ts;

SELECT s.cpu, s.ts, s.dur, t.tid, coalesce(t.name, '') AS thread, t.upid
FROM sched AS s, __report_window AS w
JOIN thread AS t USING (utid)
WHERE s.ts < w.end_ts AND s.ts + s.dur >= w.start_ts AND s.utid NOT IN (SELECT utid FROM thread WHERE tid = 0)
ORDER BY s.ts
LIMIT 20000;
