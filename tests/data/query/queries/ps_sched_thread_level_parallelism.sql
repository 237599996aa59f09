-- sched.thread_level_parallelism: each count's first 40 rows and a summary of
-- the whole table (rows, sum and maximum of the count, and its integral over
-- time up to the last change).
INCLUDE PERFETTO MODULE sched.thread_level_parallelism;
CREATE PERFETTO TABLE _tlp_c AS
SELECT 'runnable' AS t, ts, runnable_thread_count AS n FROM sched_runnable_thread_count
UNION ALL
SELECT 'uninterruptible_sleep', ts, uninterruptible_sleep_thread_count FROM sched_uninterruptible_sleep_thread_count
UNION ALL
SELECT 'active_cpu', ts, active_cpu_count FROM sched_active_cpu_count;
SELECT * FROM (
  SELECT t, 'row' AS what, ts, n, NULL AS integral
  FROM (SELECT *, row_number() OVER (PARTITION BY t ORDER BY ts) AS i FROM _tlp_c)
  WHERE i <= 40
  UNION ALL
  SELECT t, 'summary', count(*), sum(n) * 1000 + max(n), sum(n * dur)
  FROM (SELECT t, ts, n, lead(ts) OVER (PARTITION BY t ORDER BY ts) - ts AS dur FROM _tlp_c)
  GROUP BY t
)
ORDER BY t, what, ts;
