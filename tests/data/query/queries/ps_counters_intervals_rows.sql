-- counter_leading_intervals! row by row: the first 100 intervals of the trace, all columns.
INCLUDE PERFETTO MODULE counters.intervals;
SELECT * FROM counter_leading_intervals!(counter) ORDER BY ts, track_id, id LIMIT 100;
