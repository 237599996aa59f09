-- intervals.overlap on the trace's sched slices: the overlap count and merged
-- busy time of all CPUs, per CPU, and per thread (summaries), and the
-- per-thread count's first rows.
INCLUDE PERFETTO MODULE intervals.overlap;
CREATE PERFETTO TABLE _ov_busy AS SELECT ts, dur, cpu, utid FROM sched WHERE utid != 0;
SELECT 'count' AS m, NULL AS g, count(*) AS n, sum(ts - trace_start()) AS sum_ts, sum(value) AS sum_v,
  max(value) AS max_v
FROM intervals_overlap_count!(_ov_busy, ts, dur)
UNION ALL
SELECT 'count_by_cpu', group_name, count(*), sum(ts - trace_start()), sum(value), max(value)
FROM intervals_overlap_count_by_group!(_ov_busy, ts, dur, cpu)
GROUP BY group_name
UNION ALL
SELECT 'merge_0', NULL, count(*), sum(ts - trace_start()), sum(dur), max(dur)
FROM interval_merge_overlapping!((SELECT ts, dur FROM _ov_busy WHERE dur >= 0), 0)
UNION ALL
SELECT 'merge_100us', NULL, count(*), sum(ts - trace_start()), sum(dur), max(dur)
FROM interval_merge_overlapping!((SELECT ts, dur FROM _ov_busy WHERE dur >= 0), 100000)
UNION ALL
SELECT 'merge_by_cpu', cpu, count(*), sum(ts - trace_start()), sum(dur), max(dur)
FROM interval_merge_overlapping_partitioned!(_ov_busy, (cpu))
GROUP BY cpu
UNION ALL
SELECT 'merge_by_thread', NULL, count(*), sum(ts - trace_start()), sum(dur * (utid % 7)), max(dur)
FROM interval_merge_overlapping_partitioned!(_ov_busy, (utid))
UNION ALL
SELECT * FROM (
  SELECT 'count_by_thread', group_name, ts - trace_start(), value, NULL, NULL
  FROM intervals_overlap_count_by_group!(_ov_busy, ts, dur, utid)
  ORDER BY ts, group_name
  LIMIT 60)
ORDER BY 1, 2, 3, 4, 5, 6;
