-- title: Timeline scale
-- Where the spans of html_timeline start, how long each is, how many there
-- are, and how many CPUs the host has (a relayed machine's CPUs are ucpus,
-- machine * 4096 + cpu, in html_timeline).
SELECT
  trace_start() AS start_ts,
  coalesce((SELECT dur FROM sluice_cpu_timeline LIMIT 1), trace_dur()) AS bucket_ns,
  coalesce((SELECT (trace_dur() + dur - 1) / dur FROM sluice_cpu_timeline LIMIT 1), 0) AS buckets,
  (SELECT count(*) FROM cpu WHERE machine_id = 0) AS cpus;
