-- title: Slices by name
-- Slice names by the total time spent in them (nested slices count in full,
-- so totals can add up to more than the trace).
SELECT
  name,
  count(*) AS count,
  round(sum(dur) / 1e6, 3) AS total_ms,
  round(avg(dur) / 1e6, 3) AS avg_ms,
  round(max(dur) / 1e6, 3) AS max_ms
FROM slice
WHERE dur > 0
GROUP BY name
ORDER BY sum(dur) DESC
LIMIT 10;
