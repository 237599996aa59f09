-- title: Scheduling latency histogram
-- Every wait to run (thread_state 'R' and 'R+') in power-of-two buckets of
-- its duration: bucket b holds waits from 2^b to 2^(b+1) - 1 ns.

-- sluice_thread_runnable_histogram has the same per thread.
SELECT bucket, lower_ns, sum(waits) AS waits
FROM sluice_thread_runnable_histogram
GROUP BY bucket
ORDER BY bucket;
