-- intervals.overlap on hand-made intervals: overlapping, touching, open
-- (dur -1), of dur 0 and in a NULL group; each macro's whole output.
INCLUDE PERFETTO MODULE intervals.overlap;
CREATE PERFETTO TABLE _ov_d AS
SELECT column1 AS id, column2 AS ts, column3 AS dur, column4 AS g
FROM (VALUES (1, 0, 10, 'a'), (2, 5, 10, 'a'), (3, 15, 5, 'b'), (4, 22, -1, 'b'), (5, 30, 0, NULL),
  (6, 40, 5, NULL), (7, 47, 3, 'a'), (8, 45, 1, 'a'), (9, 50, 4, 'a'), (10, 60, 10, 'b'), (11, 62, 2, 'b'),
  (12, 64, 0, 'b'), (13, 70, 1, 'b'));
SELECT 'count' AS m, ts, value AS v, NULL AS g FROM intervals_overlap_count!(_ov_d, ts, dur)
UNION ALL
SELECT 'count_by_group', ts, value, group_name FROM intervals_overlap_count_by_group!(_ov_d, ts, dur, g)
UNION ALL
SELECT 'merge_0', ts, dur, NULL FROM interval_merge_overlapping!(_ov_d, 0)
UNION ALL
SELECT 'merge_2', ts, dur, NULL FROM interval_merge_overlapping!((SELECT * FROM _ov_d WHERE dur >= 0), 2)
UNION ALL
SELECT 'merge_partitioned', ts, dur, g FROM interval_merge_overlapping_partitioned!(_ov_d, (g))
ORDER BY m, ts, g, v;
