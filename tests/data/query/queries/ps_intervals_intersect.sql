-- intervals.intersect: interval_self_intersect! on hand-made intervals
-- (overlapping, nested, touching, equal, of dur 0, one listed twice) and on
-- the trace's first 40 sched slices with dur > 0.
INCLUDE PERFETTO MODULE intervals.intersect;
CREATE PERFETTO TABLE _isi_d AS
SELECT column1 AS id, column2 AS ts, column3 AS dur
FROM (VALUES (1, 10, 10), (2, 15, 10), (3, 15, 0), (2, 15, 10), (4, 30, 5), (5, 35, 5), (6, 50, 20), (7, 55, 5),
  (8, 50, 20), (9, 70, 0));
CREATE PERFETTO TABLE _isi_s AS SELECT id, ts, dur FROM sched WHERE dur > 0 ORDER BY ts, id LIMIT 40;
SELECT 'hand' AS what, * FROM interval_self_intersect!(_isi_d)
UNION ALL
SELECT 'sched', ts - trace_start(), dur, group_id, id, interval_ends_at_ts FROM interval_self_intersect!(_isi_s)
ORDER BY 1, 2, 4, 5, 6, 3;
