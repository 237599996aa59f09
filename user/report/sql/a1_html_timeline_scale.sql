-- title: Timeline scale
-- Where the spans of html_timeline start, how long each is, and how many
-- there are; the processes it names.
CREATE TEMP TABLE IF NOT EXISTS __report_timeline_scale AS
SELECT
  trace_start() AS start_ts,
  max(1, (trace_dur() + n - 1) / n) AS bucket_ns,
  n AS buckets
FROM (SELECT max(50, min(1000, 100000 / max(1, (SELECT count(*) FROM cpu)))) AS n);

SELECT start_ts, bucket_ns, buckets, (SELECT count(*) FROM cpu) AS cpus FROM __report_timeline_scale;
