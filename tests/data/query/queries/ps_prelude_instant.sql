-- The `instant` view (slices of dur 0): its columns and rows, args by
-- content.
SELECT i.ts, i.track_id, i.name,
  (SELECT group_concat(key || '=' || coalesce(display_value, 'NULL'), ';')
   FROM (SELECT key, display_value FROM args AS a WHERE a.arg_set_id = i.arg_set_id ORDER BY key)) AS args
FROM instant AS i
ORDER BY i.ts, i.track_id, i.name
LIMIT 150;
