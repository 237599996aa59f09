-- title: What ran on each CPU
-- The trace cut into equal spans (at most 1000, fewer on machines with more
-- than 40 CPUs, so the page stays small); for each CPU and span: how long it ran
-- anything but its idle task, and the process that ran longest in it. A run
-- that crosses spans is split at their edges.

-- sluice_cpu_timeline computes this in one pass over sched (docs/QUERY.md).
SELECT cpu, bucket, top_upid, top_run_ns, run_ns
FROM sluice_cpu_timeline
ORDER BY cpu, bucket;
