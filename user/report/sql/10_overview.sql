-- title: Trace
-- What the trace covers and holds: its span, its size on disk, the system it
-- was recorded on (the host, for a trace with relayed machines: see the
-- machines section) and how much of each kind of data it has.
SELECT
  round(trace_dur() / 1e9, 3) AS duration_s,
  trace_start() AS start_ts,
  trace_end() AS end_ts,
  (SELECT int_value FROM metadata WHERE name = 'trace_size_bytes') AS size_bytes,
  (SELECT str_value FROM metadata WHERE name = 'system_release' AND machine_id = 0) AS kernel,
  (SELECT str_value FROM metadata WHERE name = 'system_machine' AND machine_id = 0) AS machine,
  (SELECT count(*) FROM cpu WHERE machine_id = 0) AS cpus,
  (SELECT count(*) FROM process WHERE pid != 0) AS processes,
  (SELECT count(*) FROM thread WHERE tid != 0) AS threads,
  (SELECT count(*) FROM sched) AS sched_slices,
  (SELECT count(*) FROM slice) AS slices,
  (SELECT count(*) FROM counter) AS counter_values;
