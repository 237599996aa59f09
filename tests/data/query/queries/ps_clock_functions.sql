-- The clock conversions: to_realtime, to_monotonic, abs_time_str and
-- to_timecode at the trace's bounds and between its snapshots, and the
-- clock_snapshot rows. (For a trace without any ClockSnapshot upstream adds
-- one of its own at ts 0 with clock values 0; sluice adds none: those rows
-- are left out here.)
SELECT 'start' AS at, abs_time_str(trace_start()) AS abs, to_realtime(trace_start()) AS realtime,
  to_monotonic(trace_start()) AS monotonic, to_timecode(trace_start() - trace_start()) AS timecode
UNION ALL
SELECT 'end', abs_time_str(trace_end()), to_realtime(trace_end()), to_monotonic(trace_end()), to_timecode(trace_dur())
UNION ALL
SELECT 'before', abs_time_str(1), to_realtime(1), to_monotonic(1), to_timecode(3723004005006)
UNION ALL
SELECT 'snapshot_' || snapshot_id, abs_time_str(ts + 1000), to_realtime(ts - 1), to_monotonic(ts + 7), NULL
FROM clock_snapshot WHERE clock_name = 'BOOTTIME' AND clock_value != 0
UNION ALL
SELECT 'clock_' || clock_name, ts, clock_id, clock_value, snapshot_id
FROM clock_snapshot WHERE clock_value != 0
ORDER BY 1, 2, 3, 4, 5;
