-- thread_or_process_slice, args by their presence, the first 150; and
-- how many rows each of the three views has.
INCLUDE PERFETTO MODULE slices.with_context;
SELECT s.id, s.ts, s.dur, s.category, s.name, s.track_id, s.track_name, s.thread_name, s.utid, s.tid,
  s.process_name, s.upid, s.pid, s.depth, s.parent_id, s.arg_set_id IS NOT NULL AS has_args,
  (SELECT count(*) FROM thread_slice) AS thread_slices,
  (SELECT count(*) FROM process_slice) AS process_slices,
  (SELECT count(*) FROM thread_or_process_slice) AS either
FROM thread_or_process_slice AS s
ORDER BY s.id
LIMIT 150;
