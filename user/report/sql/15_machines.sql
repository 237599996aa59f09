-- title: Machines
-- The host and each machine relayed into the trace (docs/RELAY.md), each
-- with its kernel, CPUs and tasks, and how busy its CPUs were over the
-- trace. A trace recorded on one machine has one row, the host.
SELECT
  m.id,
  coalesce(m.name, CASE WHEN m.id = 0 THEN 'host' ELSE 'machine ' || m.raw_id END) AS machine,
  m.raw_id AS machine_id,
  m.release AS kernel,
  m.arch,
  (SELECT count(*) FROM cpu AS c WHERE c.machine_id = m.id) AS cpus,
  (SELECT count(*) FROM process AS p WHERE p.machine_id = m.id AND p.pid != 0) AS processes,
  (SELECT count(*) FROM thread AS t WHERE t.machine_id = m.id AND t.tid != 0) AS threads,
  round(100.0 * (SELECT coalesce(sum(tc.dur), 0) FROM sluice_thread_cpu AS tc JOIN thread AS t USING (utid)
                 WHERE t.machine_id = m.id AND t.tid != 0)
        / (trace_dur() * max(1, (SELECT count(*) FROM cpu AS c WHERE c.machine_id = m.id))), 2) AS busy_pct
FROM machine AS m
ORDER BY m.id;
