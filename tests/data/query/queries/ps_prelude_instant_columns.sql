-- The `instant` view's columns in order (and its rows without args).
SELECT * FROM instant WHERE arg_set_id IS NULL ORDER BY ts, track_id, name LIMIT 150;
