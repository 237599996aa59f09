-- The `counters` view per track, args by count.
SELECT track_id, name, unit, count(*) AS n, sum(value) AS total, min(ts) AS first_ts, max(ts) AS last_ts,
  min(id) AS min_id, max(id) AS max_id, count(arg_set_id) AS with_args
FROM counters
GROUP BY track_id, name, unit
ORDER BY track_id;
