-- title: Scheduling latency histogram
-- Every wait to run (thread_state 'R' and 'R+') in power-of-two buckets of
-- its duration: bucket b holds waits from 2^b to 2^(b+1) - 1 ns.
SELECT
  cast(log2(max(dur, 1)) AS INTEGER) AS bucket,
  1 << cast(log2(max(dur, 1)) AS INTEGER) AS lower_ns,
  count(*) AS waits
FROM thread_state
WHERE state IN ('R', 'R+') AND dur >= 0
GROUP BY bucket
ORDER BY bucket;
