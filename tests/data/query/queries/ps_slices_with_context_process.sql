-- process_slice (slices on process tracks), args by content.
INCLUDE PERFETTO MODULE slices.with_context;
SELECT p.id, p.ts, p.dur, p.category, p.name, p.track_id, p.track_name, p.process_name, p.upid, p.pid,
  p.depth, p.parent_id, p.thread_ts, p.thread_dur,
  (SELECT group_concat(key || '=' || coalesce(display_value, 'NULL'), ';')
   FROM (SELECT key, display_value FROM args AS a WHERE a.arg_set_id = p.arg_set_id ORDER BY key)) AS args
FROM process_slice AS p
ORDER BY p.id
LIMIT 150;
