-- Scheduling latency: sched_latency_for_running_interval gives, for each
-- Running thread_state with a runnable state before it (sched.runnable) and
-- its sched slice, how long the thread waited runnable (latency_dur).
--
-- A Running state and its sched slice are the same (utid, ts, dur); a Running
-- state without an earlier runnable one, or without a sched slice, has no row.

INCLUDE PERFETTO MODULE sched.runnable;

-- Running thread_states with their sched slices. Only Running states can match
-- (and only they are looked up below). MATERIALIZED lets SQLite index the
-- Running states for the join: joining the two tables directly is a nested
-- scan, seconds on a small trace.
CREATE PERFETTO VIEW _sched_with_thread_state_join AS
WITH running AS MATERIALIZED (SELECT id, utid, ts, dur FROM thread_state WHERE state = 'Running')
SELECT running.id AS thread_state_id, sched.id AS sched_id
FROM sched
JOIN running USING (utid, ts, dur);

CREATE PERFETTO TABLE sched_latency_for_running_interval(
  thread_state_id JOINID(thread_state.id),
  sched_id JOINID(sched.id),
  utid JOINID(thread.id),
  runnable_latency_id JOINID(thread_state.id),
  latency_dur LONG
)
AS
SELECT
  r.id AS thread_state_id,
  j.sched_id,
  runnable.utid,
  r.prev_runnable_id AS runnable_latency_id,
  runnable.dur AS latency_dur
FROM sched_previous_runnable_on_thread AS r
JOIN thread_state AS runnable ON runnable.id = r.prev_runnable_id
JOIN _sched_with_thread_state_join AS j ON j.thread_state_id = r.id;
