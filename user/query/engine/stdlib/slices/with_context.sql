-- Slices with the thread or process they belong to: thread_slice (slices on
-- thread tracks), process_slice (slices on process tracks, such as async
-- ones) and thread_or_process_slice (both). Slices on other tracks (CPU
-- tracks: IRQs, softirqs) are in none of them.

-- A thread slice's process columns are NULL when its thread has no process
-- (or names one the trace never described): the process is a LEFT JOIN, and
-- upid comes from the process row, not from thread.upid.
CREATE PERFETTO VIEW thread_slice(
  id ID(slice.id),
  ts TIMESTAMP,
  dur DURATION,
  category STRING,
  name STRING,
  track_id JOINID(track.id),
  track_name STRING,
  thread_name STRING,
  utid JOINID(thread.id),
  tid LONG,
  is_main_thread BOOL,
  process_name STRING,
  upid JOINID(process.id),
  pid LONG,
  depth LONG,
  parent_id JOINID(slice.id),
  arg_set_id ARGSETID,
  thread_ts TIMESTAMP,
  thread_dur LONG
) AS
SELECT
  s.id, s.ts, s.dur, s.category, s.name, s.track_id,
  tt.name AS track_name,
  t.name AS thread_name, t.utid, t.tid, t.is_main_thread,
  p.name AS process_name, p.upid, p.pid,
  s.depth, s.parent_id, s.arg_set_id, s.thread_ts, s.thread_dur
FROM slice AS s
JOIN thread_track AS tt ON tt.id = s.track_id
JOIN thread AS t ON t.utid = tt.utid
LEFT JOIN process AS p ON p.upid = t.upid;

-- Only slices whose process the trace describes: the process is an inner
-- join here.
CREATE PERFETTO VIEW process_slice(
  id ID(slice.id),
  ts TIMESTAMP,
  dur DURATION,
  category STRING,
  name STRING,
  track_id JOINID(track.id),
  track_name STRING,
  process_name STRING,
  upid JOINID(process.id),
  pid LONG,
  depth LONG,
  parent_id JOINID(slice.id),
  arg_set_id ARGSETID,
  thread_ts TIMESTAMP,
  thread_dur LONG
) AS
SELECT
  s.id, s.ts, s.dur, s.category, s.name, s.track_id,
  pt.name AS track_name,
  p.name AS process_name, p.upid, p.pid,
  s.depth, s.parent_id, s.arg_set_id, s.thread_ts, s.thread_dur
FROM slice AS s
JOIN process_track AS pt ON pt.id = s.track_id
JOIN process AS p ON p.upid = pt.upid;

-- thread_slice's rows then process_slice's, in one shape: the thread
-- columns are NULL on process-track rows; no is_main_thread, thread_ts or
-- thread_dur.
CREATE PERFETTO VIEW thread_or_process_slice(
  id JOINID(slice.id),
  ts TIMESTAMP,
  dur DURATION,
  category STRING,
  name STRING,
  track_id JOINID(track.id),
  track_name STRING,
  thread_name STRING,
  utid JOINID(thread.id),
  tid LONG,
  process_name STRING,
  upid JOINID(process.id),
  pid LONG,
  depth LONG,
  parent_id JOINID(slice.id),
  arg_set_id ARGSETID
) AS
SELECT
  id, ts, dur, category, name, track_id, track_name, thread_name, utid, tid,
  process_name, upid, pid, depth, parent_id, arg_set_id
FROM thread_slice
UNION ALL
SELECT
  id, ts, dur, category, name, track_id, track_name,
  NULL AS thread_name, NULL AS utid, NULL AS tid,
  process_name, upid, pid, depth, parent_id, arg_set_id
FROM process_slice;
