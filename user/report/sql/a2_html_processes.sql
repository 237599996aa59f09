-- title: Processes
-- Every process the trace saw run, with its CPU time: the names behind the
-- upids of the other sections.
SELECT
  t.upid,
  p.pid,
  coalesce(p.name, t.name, '[unknown]') AS name,
  sum(s.dur) AS cpu_ns
FROM sched AS s
JOIN thread AS t USING (utid)
LEFT JOIN process AS p USING (upid)
WHERE s.utid != 0
GROUP BY t.upid
ORDER BY cpu_ns DESC
LIMIT 5000;
