-- CPU idle states as intervals: cpu_idle_counters has one row per stretch of
-- time a CPU's cpuidle counter held a value, idle -1 meaning the CPU was
-- running and 0 and up ever deeper idle states.
--
-- The kernel's cpu_idle event reports leaving idle as state 4294967295
-- (UINT32_MAX, i.e. (u32)-1); that value becomes -1 here. The intervals come
-- from counter_leading_intervals!, the last one running to the trace's end.

INCLUDE PERFETTO MODULE counters.intervals;

CREATE PERFETTO TABLE cpu_idle_counters(
  id LONG,
  track_id JOINID(track.id),
  ts TIMESTAMP,
  dur DURATION,
  idle LONG,
  cpu LONG
) AS
SELECT
  iv.id,
  iv.track_id,
  iv.ts,
  iv.dur,
  CAST(CASE WHEN iv.value = 4294967295 THEN -1 ELSE iv.value END AS INT) AS idle,
  t.cpu
FROM counter_leading_intervals!((
  SELECT counter.*
  FROM counter
  JOIN cpu_counter_track AS idle_track ON idle_track.id = counter.track_id
  WHERE idle_track.name = 'cpuidle'
)) AS iv
JOIN cpu_counter_track AS t ON t.id = iv.track_id;
