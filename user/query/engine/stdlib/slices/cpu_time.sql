-- thread_slice_cpu_time: how long each thread slice's thread was on a CPU
-- during the slice, from sched; thread_slice_cpu_cycles: the cycles it ran
-- then (linux.cpu.utilization.slice's cpu_cycles_per_thread_slice).
--
-- Only finished, non-empty slices (dur > 0) on threads other than the idle
-- one (utid 0), and only finished runs (dur > 0): the last run on each CPU,
-- still open at the end of the trace (dur -1), counts nowhere, as upstream.
-- A slice whose thread never ran during it has no row (not 0).

INCLUDE PERFETTO MODULE linux.cpu.utilization.slice;
INCLUDE PERFETTO MODULE slices.with_context;

-- The runs of threads that have slice tracks, indexed by (utid, ts): one
-- range read per slice instead of a scan of sched per slice.
CREATE PERFETTO TABLE _slice_cpu_time_run AS
SELECT ts, dur, utid
FROM sched
WHERE dur > 0 AND utid IN (SELECT utid FROM thread_track);

CREATE PERFETTO INDEX _slice_cpu_time_run_by_utid_ts ON _slice_cpu_time_run(utid, ts);

-- A run overlapping [ts, ts + dur) starts after ts - (the thread's longest
-- run), which bounds the index range without assuming runs never overlap.
CREATE PERFETTO TABLE _slice_cpu_time_longest AS
SELECT utid, max(dur) AS longest FROM _slice_cpu_time_run GROUP BY utid;

CREATE PERFETTO TABLE thread_slice_cpu_time(
  id JOINID(slice.id),
  name STRING,
  utid JOINID(thread.id),
  thread_name STRING,
  upid JOINID(process.id),
  process_name STRING,
  cpu_time LONG
) AS
SELECT
  s.id, s.name, s.utid, s.thread_name, s.upid, s.process_name,
  sum(min(s.ts + s.dur, r.ts + r.dur) - max(s.ts, r.ts)) AS cpu_time
FROM thread_slice AS s
JOIN _slice_cpu_time_longest AS l ON l.utid = s.utid
JOIN _slice_cpu_time_run AS r
  ON r.utid = s.utid AND r.ts > s.ts - l.longest AND r.ts < s.ts + s.dur
WHERE s.utid > 0 AND s.dur > 0 AND r.ts + r.dur > s.ts
GROUP BY s.id
ORDER BY s.id;

CREATE PERFETTO VIEW thread_slice_cpu_cycles(
  id JOINID(slice.id),
  name STRING,
  utid JOINID(thread.id),
  thread_name STRING,
  upid JOINID(process.id),
  process_name STRING,
  millicycles LONG,
  megacycles LONG
) AS
SELECT id, name, utid, thread_name, upid, process_name, millicycles, megacycles
FROM cpu_cycles_per_thread_slice;
