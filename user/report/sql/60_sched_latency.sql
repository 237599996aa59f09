-- title: Scheduling latency
-- How long threads waited to run once they were runnable (woken or
-- preempted: thread_state 'R' and 'R+'), for the 10 threads that waited
-- longest in total. Percentiles in microseconds; percentile() is SQLite's
-- (P from 0 to 100, interpolated).
CREATE TEMP TABLE IF NOT EXISTS __report_runnable AS
SELECT utid, count(*) AS waits, sum(dur) AS dur
FROM thread_state
WHERE state IN ('R', 'R+')
GROUP BY utid;

SELECT
  t.tid,
  coalesce(t.name, '[unknown]') AS thread,
  coalesce(p.name, '[unknown]') AS process,
  w.waits,
  round(w.dur / 1e9, 3) AS waited_s,
  round(percentile(s.dur, 50) / 1e3, 1) AS p50_us,
  round(percentile(s.dur, 90) / 1e3, 1) AS p90_us,
  round(percentile(s.dur, 99) / 1e3, 1) AS p99_us,
  round(max(s.dur) / 1e3, 1) AS max_us
FROM (SELECT * FROM __report_runnable ORDER BY dur DESC LIMIT 10) AS w
JOIN thread_state AS s ON s.utid = w.utid AND s.state IN ('R', 'R+')
JOIN thread AS t ON t.utid = w.utid
LEFT JOIN process AS p USING (upid)
GROUP BY w.utid
ORDER BY w.dur DESC;
