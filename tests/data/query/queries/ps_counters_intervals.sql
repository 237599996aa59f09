-- counter_leading_intervals! over every counter track: per track, the rows kept and their sums.
INCLUDE PERFETTO MODULE counters.intervals;
SELECT track_id, count(*) AS n, min(ts) AS first_ts, sum(dur) AS dur, sum(value) AS value,
  sum(next_value) AS next_value, sum(delta_value) AS delta_value, count(next_value) AS with_next,
  count(delta_value) AS with_delta
FROM counter_leading_intervals!(counter)
GROUP BY track_id ORDER BY track_id;
