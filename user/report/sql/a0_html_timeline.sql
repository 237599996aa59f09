-- title: What ran on each CPU
-- The trace cut into equal spans (at most 1000, fewer on machines with many
-- CPUs, so the page stays small); for each CPU and span: how long it ran
-- anything but its idle task, and the process that ran longest in it. A run
-- that crosses spans is split at their edges.
CREATE TEMP TABLE IF NOT EXISTS __report_timeline_scale AS
SELECT
  trace_start() AS start_ts,
  max(1, (trace_dur() + n - 1) / n) AS bucket_ns,
  n AS buckets
FROM (SELECT max(50, min(1000, 100000 / max(1, (SELECT count(*) FROM cpu)))) AS n);

CREATE TEMP TABLE IF NOT EXISTS __report_timeline AS
WITH RECURSIVE
  runs AS (
    SELECT s.cpu, t.upid, s.ts, s.ts + s.dur AS end_ts
    FROM sched AS s JOIN thread AS t USING (utid)
    WHERE s.utid != 0 AND s.dur > 0),
  -- Runs longer than a span, cut at the span edges.
  pieces(cpu, upid, ts, end_ts) AS (
    SELECT cpu, upid, ts, end_ts FROM runs, __report_timeline_scale AS k
    WHERE end_ts - ts > k.bucket_ns
    UNION ALL
    SELECT cpu, upid, k.start_ts + ((ts - k.start_ts) / k.bucket_ns + 1) * k.bucket_ns, end_ts
    FROM pieces, __report_timeline_scale AS k
    WHERE k.start_ts + ((ts - k.start_ts) / k.bucket_ns + 1) * k.bucket_ns < end_ts),
  clipped AS (
    SELECT cpu, upid, ts,
           min(end_ts, k.start_ts + ((ts - k.start_ts) / k.bucket_ns + 1) * k.bucket_ns) - ts AS dur
    FROM pieces, __report_timeline_scale AS k
    UNION ALL
    -- Runs within one span: counted in the span they start in.
    SELECT cpu, upid, ts, end_ts - ts FROM runs, __report_timeline_scale AS k
    WHERE end_ts - ts <= k.bucket_ns),
  per_process AS (
    SELECT cpu, (ts - k.start_ts) / k.bucket_ns AS bucket, upid, sum(dur) AS run_ns
    FROM clipped, __report_timeline_scale AS k
    GROUP BY cpu, bucket, upid)
-- SQLite takes upid from the row that holds max(run_ns).
SELECT cpu, bucket, upid AS top_upid, max(run_ns) AS top_run_ns, sum(run_ns) AS run_ns
FROM per_process
GROUP BY cpu, bucket;

SELECT * FROM __report_timeline ORDER BY cpu, bucket;
