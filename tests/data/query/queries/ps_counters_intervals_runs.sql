-- counter_leading_intervals! on hand-made runs of equal values: which rows of a run survive, the
-- dropped tail of a track's last run, a run at ts 0, and the last interval ending at trace_end().
INCLUDE PERFETTO MODULE counters.intervals;
SELECT id, ts, dur - trace_end() AS dur_minus_end, dur, track_id, value, next_value, delta_value
FROM counter_leading_intervals!((
  SELECT column1 AS id, column2 AS ts, column3 AS track_id, column4 AS value
  FROM (VALUES
    (1, 100, 1, 10), (2, 110, 1, 10), (3, 120, 1, 10), (4, 130, 1, 10), (5, 140, 1, 20),
    (6, 150, 1, 20), (7, 160, 1, 20), (8, 170, 1, 20), (9, 175, 1, 20),
    (10, 100, 2, 10), (11, 110, 2, 20), (12, 120, 2, 20), (13, 130, 2, 10), (14, 140, 2, 10),
    (15, 150, 2, 10), (16, 160, 2, 5),
    (17, 0, 3, 1), (18, 0, 3, 1), (19, 0, 3, 1), (20, 10, 3, 2), (21, 20, 3, 2.5),
    (22, 50, 4, 7))
))
ORDER BY track_id, ts, id;
