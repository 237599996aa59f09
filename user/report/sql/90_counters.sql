-- title: Counters
-- Each counter track (atrace counters, CPU frequency and idle states, ...):
-- how many values it has and their range.
SELECT
  ct.name,
  ct.type,
  coalesce('cpu ' || cct.cpu, 'pid ' || p.pid, '') AS owner,
  count(*) AS values_seen,
  min(c.value) AS min,
  max(c.value) AS max,
  round(avg(c.value), 3) AS avg
FROM counter AS c
JOIN counter_track AS ct ON ct.id = c.track_id
LEFT JOIN cpu_counter_track AS cct ON cct.id = c.track_id
LEFT JOIN process_counter_track AS pct ON pct.id = c.track_id
LEFT JOIN process AS p ON p.upid = pct.upid
GROUP BY c.track_id
ORDER BY ct.name, owner
LIMIT 20;
