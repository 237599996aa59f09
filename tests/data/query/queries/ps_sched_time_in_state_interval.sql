-- sched.time_in_state: the *_in_interval functions for the thread with the most
-- states and for CPU 0 and 1, over the middle half of the trace, over an
-- interval starting where one of the thread's states starts, and at one
-- instant (dur 0) inside a state.
INCLUDE PERFETTO MODULE sched.time_in_state;
CREATE PERFETTO TABLE _tis_thread AS
SELECT utid FROM thread_state WHERE utid != 0 GROUP BY utid ORDER BY count(*) DESC, utid LIMIT 1;
CREATE PERFETTO TABLE _tis_window AS
SELECT 'middle' AS w, trace_start() + trace_dur() / 4 AS ts, trace_dur() / 2 AS dur
UNION ALL
SELECT * FROM (
  SELECT 'from_state', ts, 3 * dur FROM thread_state WHERE utid = (SELECT utid FROM _tis_thread) AND dur > 1000
  ORDER BY ts LIMIT 1 OFFSET 7)
UNION ALL
SELECT * FROM (
  SELECT 'instant', ts + dur / 2, 0 FROM thread_state WHERE utid = (SELECT utid FROM _tis_thread) AND dur > 1000
  ORDER BY ts LIMIT 1 OFFSET 3);
SELECT 'thread' AS f, w.w, r.state, r.io_wait, NULL AS cpu, r.blocked_function, r.dur
FROM _tis_window AS w JOIN _tis_thread AS t
JOIN sched_time_in_state_for_thread_in_interval(w.ts, w.dur, t.utid) AS r
UNION ALL
SELECT 'thread_cpu', w.w, r.state, r.io_wait, r.cpu, r.blocked_function, r.dur
FROM _tis_window AS w JOIN _tis_thread AS t
JOIN sched_time_in_state_and_cpu_for_thread_in_interval(w.ts, w.dur, t.utid) AS r
UNION ALL
SELECT 'cpu', w.w, r.end_state, NULL, c.cpu, NULL, r.dur
FROM _tis_window AS w JOIN (SELECT 0 AS cpu UNION ALL SELECT 1) AS c
JOIN sched_time_in_state_for_cpu_in_interval(c.cpu, w.ts, w.dur) AS r
ORDER BY 1, 2, 5, 3, 4, 6, 7;
