-- title: Processes
-- Every process the trace saw run, with its CPU time: the names behind the
-- upids of the other sections (the first 5000 by CPU time).
SELECT
  t.upid,
  p.pid,
  coalesce(p.name, t.name, '[unknown]') || CASE WHEN t.machine_id != 0 THEN ' @' || (SELECT coalesce(name, 'machine ' || raw_id) FROM machine WHERE id = t.machine_id) ELSE '' END AS name,
  sum(c.dur) AS cpu_ns
FROM sluice_thread_cpu AS c
JOIN thread AS t USING (utid)
LEFT JOIN process AS p USING (upid)
WHERE t.tid != 0
GROUP BY t.upid
ORDER BY cpu_ns DESC
LIMIT 5000;
