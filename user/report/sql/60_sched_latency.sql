-- title: Scheduling latency
-- How long threads waited to run once they were runnable (woken or
-- preempted: thread_state 'R' and 'R+'), for the 10 threads that waited
-- longest in total. Percentiles in microseconds.

-- sluice_thread_runnable sums each thread's waits in one pass (docs/QUERY.md);
-- for other percentiles, SQLite's percentile() over thread_state gives the
-- same figures:
--   select utid, count(*) as waits, sum(dur) as dur, percentile(dur, 95)
--   from thread_state where state in ('R', 'R+') and dur >= 0 group by utid
SELECT
  t.tid,
  coalesce(t.name, '[unknown]') AS thread,
  coalesce(p.name, '[unknown]') || CASE WHEN t.machine_id != 0 THEN ' @' || (SELECT coalesce(name, 'machine ' || raw_id) FROM machine WHERE id = t.machine_id) ELSE '' END AS process,
  w.waits,
  round(w.dur / 1e9, 3) AS waited_s,
  round(w.p50_dur / 1e3, 1) AS p50_us,
  round(w.p90_dur / 1e3, 1) AS p90_us,
  round(w.p99_dur / 1e3, 1) AS p99_us,
  round(w.max_dur / 1e3, 1) AS max_us
FROM sluice_thread_runnable AS w
JOIN thread AS t USING (utid)
LEFT JOIN process AS p USING (upid)
ORDER BY w.dur DESC
LIMIT 10;
