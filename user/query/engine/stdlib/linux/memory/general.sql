-- Helpers for the linux.memory modules (no public tables): every process
-- counter as an interval, holding until the track's next sample.
--
-- A track's last sample holds until its process ended, or the trace did,
-- plus 1 ns (upstream's choice, kept so that durations agree).

CREATE PERFETTO VIEW _all_counters_per_process AS
SELECT
  c.ts,
  lead(c.ts, 1, (SELECT coalesce(p.end_ts, trace_end()) FROM process AS p WHERE p.upid = t.upid) + 1)
    OVER (PARTITION BY c.track_id ORDER BY c.ts) - c.ts AS dur,
  t.upid,
  c.value,
  c.track_id,
  t.name
FROM counter AS c
JOIN process_counter_track AS t ON t.id = c.track_id
WHERE t.upid IS NOT NULL;
