-- title: CPU time by process
-- The 10 processes whose threads ran longest on any CPU, from the sched
-- table (context switches). cpu_pct is the share of all CPUs over the trace
-- (of its machine's, for a process of a relayed machine, named NAME @MACHINE).

-- sluice_thread_cpu: sched's runs and time per thread and CPU, summed in
-- one pass (docs/QUERY.md); the same as
--   select utid, cpu, count(*) as runs, sum(dur) as dur from sched
--   where dur >= 0 group by utid, cpu
CREATE TEMP TABLE IF NOT EXISTS __report_thread_cpu AS
SELECT utid, sum(runs) AS runs, sum(dur) AS dur
FROM sluice_thread_cpu
WHERE utid NOT IN (SELECT utid FROM thread WHERE tid = 0)
GROUP BY utid;

SELECT
  p.pid,
  coalesce(p.name, '[unknown]') || CASE WHEN t.machine_id != 0 THEN ' @' || (SELECT coalesce(name, 'machine ' || raw_id) FROM machine WHERE id = t.machine_id) ELSE '' END AS process,
  count(*) AS threads,
  round(sum(c.dur) / 1e9, 3) AS cpu_s,
  round(100.0 * sum(c.dur) / (trace_dur() * (SELECT count(*) FROM cpu WHERE machine_id = t.machine_id)), 2) AS cpu_pct
FROM __report_thread_cpu AS c
JOIN thread AS t USING (utid)
LEFT JOIN process AS p USING (upid)
GROUP BY t.upid
ORDER BY sum(c.dur) DESC
LIMIT 10;
