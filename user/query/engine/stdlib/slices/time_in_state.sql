-- thread_slice_time_in_state: how long each thread slice spent in each
-- scheduling state (Running, R, S, D, ...) of its thread, from thread_state.
--
-- Only finished, non-empty slices (dur > 0) on threads other than the idle
-- one (utid 0), and only states with dur > 0: the last, open state of a
-- thread (dur -1) counts nowhere, so the tail of a slice still running at the
-- end of its thread's states is left out, as upstream leaves it. A slice with
-- no state overlapping it has no row.

INCLUDE PERFETTO MODULE slices.with_context;

-- The states of threads that have slice tracks, indexed by (utid, ts): one
-- range read per slice instead of a scan of thread_state per slice.
CREATE PERFETTO TABLE _slice_tis_state AS
SELECT id, ts, dur, utid, state, io_wait, blocked_function
FROM thread_state
WHERE dur > 0 AND utid IN (SELECT utid FROM thread_track);

CREATE PERFETTO INDEX _slice_tis_state_by_utid_ts ON _slice_tis_state(utid, ts);

-- A thread's states do not overlap, but nothing here relies on it: a state
-- overlapping [ts, ts + dur) starts after ts - (the thread's longest state),
-- which bounds the index range exactly.
CREATE PERFETTO TABLE _slice_tis_longest AS
SELECT utid, max(dur) AS longest FROM _slice_tis_state GROUP BY utid;

CREATE PERFETTO TABLE thread_slice_time_in_state(
  id JOINID(slice.id),
  name STRING,
  utid JOINID(thread.id),
  thread_name STRING,
  upid JOINID(process.id),
  process_name STRING,
  state STRING,
  io_wait BOOL,
  blocked_function STRING,
  dur DURATION
) AS
SELECT
  s.id, s.name, s.utid, s.thread_name, s.upid, s.process_name,
  st.state, st.io_wait, st.blocked_function,
  sum(min(s.ts + s.dur, st.ts + st.dur) - max(s.ts, st.ts)) AS dur
FROM thread_slice AS s
JOIN _slice_tis_longest AS l ON l.utid = s.utid
JOIN _slice_tis_state AS st
  ON st.utid = s.utid AND st.ts > s.ts - l.longest AND st.ts < s.ts + s.dur
WHERE s.utid > 0 AND s.dur > 0 AND st.ts + st.dur > s.ts
GROUP BY s.id, st.state, st.io_wait, st.blocked_function
ORDER BY s.id, st.state, st.io_wait, st.blocked_function;
