-- title: Window
-- The window the page shows slices and CPU runs for: `sluice report
-- --window START,END` sets it (seconds from the trace's start); by default
-- it is the whole trace. How many slices and runs fall in it; the page shows
-- the first 20000 of each.
CREATE TEMP TABLE IF NOT EXISTS __report_window AS
SELECT trace_start() AS start_ts, trace_end() AS end_ts;

SELECT
  w.start_ts,
  w.end_ts,
  (SELECT count(*) FROM slice AS s WHERE s.ts < w.end_ts AND s.ts + max(s.dur, 0) >= w.start_ts) AS slices,
  -- The whole trace's runs are counted already; a window's need a scan.
  CASE
    WHEN w.start_ts <= trace_start() AND w.end_ts >= trace_end()
      THEN (SELECT coalesce(sum(runs), 0) FROM sluice_thread_cpu WHERE utid NOT IN (SELECT utid FROM thread WHERE tid = 0))
    ELSE (SELECT count(*) FROM sched AS s WHERE s.ts < w.end_ts AND s.ts + s.dur >= w.start_ts AND s.utid NOT IN (SELECT utid FROM thread WHERE tid = 0))
  END AS runs
FROM __report_window AS w;
