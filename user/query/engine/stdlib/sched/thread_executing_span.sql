-- Thread executing spans and the critical path (private, as upstream's: the
-- machinery of critical-path analyses). A thread executing span starts
-- with a runnable state a thread (not an interrupt) woke, and lasts until
-- the thread's next such state; its id is that runnable state's. The spans
-- and who woke each make the wakeup graph (_wakeup_graph), which
-- _thread_executing_span_critical_path(utid, ts, dur) walks backwards from
-- a thread over an interval: who kept it from running, and who ran.
--
-- A wakeup from an interrupt (thread_state.irq_context 1) or with io_wait
-- set counts as an interrupt wakeup (idle_state 'IRQ', no waker), as
-- upstream counts it; irq_context comes from compact sched_waking's flags
-- (NULL: from a task).

INCLUDE PERFETTO MODULE intervals.overlap;

-- Finished runnable states with a waker; is_irq as above.
CREATE PERFETTO TABLE _runnable_state AS
SELECT
  id, ts, dur, state, utid, waker_id, waker_utid,
  iif(irq_context = 0 OR irq_context IS NULL, coalesce(io_wait, 0), 1) AS is_irq
FROM thread_state
WHERE dur != -1 AND waker_id IS NOT NULL;

CREATE PERFETTO TABLE _is_fuchsia AS
SELECT EXISTS (SELECT 1 FROM metadata WHERE name = 'trace_type' AND str_value = 'fuchsia') AS is_fuchsia;

-- Runnable: 'R' on Linux (Fuchsia's waking 'W' too).
CREATE PERFETTO MACRO _is_runnable_state(state Expr)
RETURNS Expr
AS ($state = 'R' OR ($state = 'W' AND (SELECT is_fuchsia FROM _is_fuchsia)));

-- Each thread's first state, when it is a finished runnable one.
CREATE PERFETTO TABLE _first_runnable_state AS
SELECT
  t.id, t.ts, t.dur, t.state, t.utid, t.waker_id, t.waker_utid,
  iif(t.irq_context = 0 OR t.irq_context IS NULL, coalesce(t.io_wait, 0), 1) AS is_irq
FROM thread_state AS t
JOIN (SELECT min(id) AS id FROM thread_state GROUP BY utid) USING (id)
WHERE t.dur != -1 AND _is_runnable_state!(t.state);

-- Finished sleeps: interruptible, uninterruptible and idle.
CREATE PERFETTO TABLE _sleep_state AS
SELECT id, ts, dur, state, blocked_function, utid, CAST(ts + dur AS INT) AS end_ts
FROM thread_state
WHERE dur != -1 AND state IN ('S', 'D', 'I');

-- A runnable state finds the sleep that ends where it starts by lookup,
-- not by a scan of its thread's sleeps. (end_ts is cast to INT: an
-- expression column has no type, and SQLite then uses only the index's
-- utid for `end_ts = ts`, scanning every sleep of a busy thread.)
CREATE PERFETTO INDEX _sleep_state_by_end ON _sleep_state(utid, end_ts);

-- Where each thread's last finished state ends: the end of the one that
-- starts last (not the latest end: after lost events a thread's states can
-- overlap). One grouping pass, SQLite taking dur from the row max() picks:
-- a window over every state took a minute on 17 M states.
CREATE PERFETTO TABLE _thread_end_ts AS
SELECT utid, max(ts) + dur AS end_ts
FROM thread_state
WHERE dur != -1
GROUP BY utid;

-- Each span's start: a runnable state right after a sleep of its thread
-- (prev_end_ts: the sleep's start), or a thread's first state when
-- runnable (no sleep before it).
CREATE PERFETTO TABLE _wakeup AS
WITH _all AS (
  SELECT s.state, s.blocked_function, r.id, r.ts, r.utid, r.waker_id, r.waker_utid, s.ts AS prev_end_ts, r.is_irq
  FROM _runnable_state AS r
  JOIN _sleep_state AS s ON s.utid = r.utid AND s.end_ts = r.ts
  UNION ALL
  SELECT NULL, NULL, id, ts, utid, waker_id, waker_utid, NULL, is_irq
  FROM _first_runnable_state
)
SELECT _all.*, e.end_ts AS thread_end_ts
FROM _all
LEFT JOIN _thread_end_ts AS e USING (utid);

-- Each finished Running state (waker_id) with its thread's runnable state
-- before it (id): the span the waker was in when it woke another.
CREATE PERFETTO TABLE _wakeup_map AS
WITH
  _states AS (
    SELECT id, utid, state FROM thread_state WHERE state = 'Running' AND dur != -1
    UNION ALL
    SELECT id, utid, state FROM _first_runnable_state
    UNION ALL
    SELECT id, utid, state FROM _runnable_state
  ),
  _with_runnable AS (
    SELECT id AS running_id, state,
      max(id) FILTER (WHERE _is_runnable_state!(state)) OVER (PARTITION BY utid ORDER BY id) AS runnable_id
    FROM _states
  )
SELECT runnable_id AS id, running_id AS waker_id
FROM _with_runnable
WHERE state = 'Running'
ORDER BY running_id;

CREATE PERFETTO INDEX _wakeup_map_by_waker ON _wakeup_map(waker_id);

-- The wakeup graph: one node per span with its waker's span (NULL when an
-- interrupt woke it), its idle stretch before (idle_dur: since the sleep's
-- start), its thread's previous span, and its duration up to the next
-- span's sleep (or the thread's end).
CREATE PERFETTO TABLE _wakeup_graph AS
WITH _events AS (
  SELECT
    w.utid, w.thread_end_ts, iif(w.is_irq, 'IRQ', w.state) AS idle_state, w.blocked_function AS idle_reason, w.id,
    iif(w.is_irq, NULL, m.id) AS waker_id, w.ts, w.prev_end_ts AS idle_ts
  FROM _wakeup AS w
  LEFT JOIN _wakeup_map AS m USING (waker_id)
)
SELECT
  utid, id, waker_id, ts, idle_state, idle_reason, ts - idle_ts AS idle_dur,
  lag(id) OVER (PARTITION BY utid ORDER BY ts) AS prev_id,
  coalesce(lead(idle_ts) OVER (PARTITION BY utid ORDER BY ts), thread_end_ts) - ts AS dur
FROM _events
ORDER BY id;

-- The graph nodes (root_node_id, capacity) whose spans cover the intervals
-- (utid, ts, dur) of a table: per interval, from the last node of its
-- thread starting at or before the interval's start (or the thread's first)
-- to the first starting at or after its end (or the thread's last), by id.
CREATE PERFETTO MACRO _intervals_to_roots(_source_table TableOrSubquery, _node_table TableOrSubquery)
RETURNS TableOrSubquery
AS (
  WITH
    _itr_node AS (SELECT * FROM $_node_table),
    _itr_source AS (SELECT * FROM $_source_table),
    _itr_bounds AS (SELECT utid, min(ts) AS min_start, max(ts) AS max_start FROM _itr_node GROUP BY utid),
    _itr_start AS (
      SELECT s.utid, s.ts, s.dur, max(n.id) AS start_id
      FROM _itr_source AS s
      JOIN _itr_bounds AS b USING (utid)
      JOIN _itr_node AS n ON n.utid = s.utid AND n.ts <= max(s.ts, b.min_start)
      GROUP BY s.ts, s.utid
    ),
    _itr_end AS (
      SELECT s.utid, s.ts, s.dur, min(n.id) AS end_id
      FROM _itr_source AS s
      JOIN _itr_bounds AS b USING (utid)
      JOIN _itr_node AS n ON n.utid = s.utid AND n.ts >= min(s.ts + s.dur, b.max_start)
      GROUP BY s.ts, s.utid
    )
  SELECT DISTINCT n.id AS root_node_id, n.id - coalesce(n.prev_id, n.id) AS capacity
  FROM _itr_start AS st
  JOIN _itr_end AS en ON en.ts = st.ts AND en.dur = st.dur AND en.utid = st.utid
  JOIN _itr_node AS n ON n.utid = st.utid AND n.id BETWEEN st.start_id AND en.end_id
);

-- The walk's frames for each root (operators/critical_path.h): root_id,
-- depth, ts, dur, id (the blocker's span) and parent_id (the span one level
-- up; the root at depth 0).
CREATE PERFETTO MACRO _critical_path_with_depth_by_roots(_roots_table TableOrSubquery, _node_table TableOrSubquery)
RETURNS TableOrSubquery
AS (
  SELECT root_id, depth, ts, dur, blocker_id AS id, parent_id
  FROM __sluice_critical_path_walk(
    (SELECT __sluice_wakeup_graph(id, utid, ts, dur, idle_dur, waker_id, prev_id) FROM $_node_table),
    (SELECT __sluice_int_list(root_node_id) FROM $_roots_table))
);

-- One blocker per (root_id, ts): the frames' layers flattened to the
-- deepest one at each time (intervals.overlap's _intervals_flatten!).
CREATE PERFETTO MACRO _critical_path_by_roots(_roots_table TableOrSubquery, _node_table TableOrSubquery)
RETURNS TableOrSubquery
AS (
  WITH
    _cpr_frame AS (SELECT * FROM _critical_path_with_depth_by_roots!($_roots_table, $_node_table)),
    _cpr_span AS (
      SELECT root_id, min(ts) AS root_ts, max(ts + dur) - min(ts) AS root_dur FROM _cpr_frame GROUP BY root_id
    ),
    _cpr_input AS (
      SELECT f.root_id, s.root_ts, s.root_dur, f.parent_id, f.id, f.ts, f.dur
      FROM _cpr_frame AS f
      JOIN _cpr_span AS s USING (root_id)
    )
  SELECT root_id, id, ts, dur
  FROM _intervals_flatten!(_cpr_input)
  WHERE dur > 0
);

-- The critical path of each interval (utid, ts, dur) of a table: its
-- blockers' spans (id, their thread utid, from root_id), cut to the
-- interval (ts, dur), with the interval's own ts and dur.
CREATE PERFETTO MACRO _critical_path_by_intervals(_intervals_table TableOrSubquery, _node_table TableOrSubquery)
RETURNS TableOrSubquery
AS (
  WITH
    _cpi_node AS (SELECT * FROM $_node_table),
    _cpi_interval AS (SELECT ts, dur, utid AS root_utid FROM $_intervals_table),
    _cpi_path AS (
      SELECT root_id, id AS cr_id, ts, dur
      FROM _critical_path_by_roots!(_intervals_to_roots!($_intervals_table, $_node_table), _cpi_node)
    ),
    _cpi_span AS (
      SELECT r.utid AS root_utid, n.utid, p.root_id, p.cr_id, p.ts, p.dur
      FROM _cpi_path AS p
      JOIN _cpi_node AS r ON r.id = p.root_id
      JOIN _cpi_node AS n ON n.id = p.cr_id
    )
  SELECT DISTINCT
    s.root_utid, s.utid, s.root_id, s.cr_id AS id,
    max(s.ts, i.ts) AS ts,
    max(0, min(s.ts + s.dur, i.ts + i.dur) - max(s.ts, i.ts)) AS dur,
    i.ts AS interval_ts, i.dur AS interval_dur
  FROM _cpi_span AS s
  JOIN _cpi_interval AS i ON i.root_utid = s.root_utid
  WHERE CASE
    WHEN i.dur = 0 THEN s.ts <= i.ts AND i.ts < s.ts + s.dur
    ELSE s.ts < i.ts + i.dur AND s.ts + s.dur > i.ts
  END
);

-- The critical path of thread root_utid over [ts, ts + dur): for each span
-- on it (id, ts, dur, its thread utid), cut to the interval, from the
-- root span (root_id) whose wait it explains.
CREATE PERFETTO FUNCTION _thread_executing_span_critical_path(root_utid LONG, ts TIMESTAMP, dur DURATION)
RETURNS TABLE(root_utid LONG, root_id LONG, id LONG, ts TIMESTAMP, dur DURATION, utid LONG)
AS
SELECT root_utid, root_id, id, ts, dur, utid
FROM _critical_path_by_intervals!((SELECT $root_utid AS utid, $ts AS ts, $dur AS dur), _wakeup_graph);
