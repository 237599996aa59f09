-- The `slices` rows that have args, with the args by content.
SELECT s.id, s.ts, s.dur, s.track_id, s.category, s.name, s.depth, s.parent_id, s.cat, s.slice_id,
  (SELECT group_concat(key || '=' || coalesce(display_value, 'NULL'), ';')
   FROM (SELECT key, display_value FROM args AS a WHERE a.arg_set_id = s.arg_set_id ORDER BY key)) AS args
FROM slices AS s
WHERE s.arg_set_id IS NOT NULL
ORDER BY s.id
LIMIT 150;
