-- The interval-intersect operator: _interval_intersect! over two and three
-- tables, partitioned and not, with touching intervals and instants, and
-- _interval_intersect_single!; then each thread's running time within its
-- thread_state intervals, from the trace.
INCLUDE PERFETTO MODULE intervals.intersect;
CREATE PERFETTO TABLE _ii_a AS
SELECT 1 AS id, 0 AS ts, 10 AS dur, 0 AS cpu UNION ALL
SELECT 2, 10, 5, 0 UNION ALL
SELECT 3, 20, 0, 0 UNION ALL
SELECT 4, 30, 10, 1 UNION ALL
SELECT 5, 50, 0, 1;
CREATE PERFETTO TABLE _ii_b AS
SELECT 11 AS id, 5 AS ts, 20 AS dur, 0 AS cpu UNION ALL
SELECT 12, 20, 0, 0 UNION ALL
SELECT 13, 35, 20, 1 UNION ALL
SELECT 14, 40, 0, 1 UNION ALL
SELECT 15, 0, 100, 2;
CREATE PERFETTO TABLE _ii_c AS
SELECT 21 AS id, 0 AS ts, 12 AS dur, 0 AS cpu UNION ALL
SELECT 22, 36, 2, 1;
SELECT 'two' AS what, ts, dur, id_0, id_1, NULL AS id_2, cpu FROM _interval_intersect!((_ii_a, _ii_b), (cpu))
UNION ALL
SELECT 'two_unpartitioned', ts, dur, id_0, id_1, NULL, NULL FROM _interval_intersect!((_ii_a, _ii_b), ())
UNION ALL
SELECT 'three', ts, dur, id_0, id_1, id_2, cpu FROM _interval_intersect!((_ii_a, _ii_b, _ii_c), (cpu))
UNION ALL
SELECT 'single', ts, dur, id, NULL, NULL, NULL FROM _interval_intersect_single!(8, 30, _ii_b)
UNION ALL
SELECT 'single_instant', ts, dur, id, NULL, NULL, NULL FROM _interval_intersect_single!(20, 0, _ii_a)
UNION ALL
SELECT 'running_in_state', count(*), sum(ii.dur), count(DISTINCT ii.utid), NULL, NULL, NULL
FROM _interval_intersect!(
  ((SELECT id, ts, dur, utid FROM thread_state WHERE dur >= 0),
   (SELECT id, ts, dur, utid FROM sched WHERE dur >= 0 AND utid != 0)),
  (utid)) AS ii
ORDER BY what, ts, dur, id_0, id_1, id_2;
