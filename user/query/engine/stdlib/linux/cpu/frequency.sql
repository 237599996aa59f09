-- CPU frequency as intervals: cpu_frequency_counters has one row per stretch
-- of time a CPU's cpufreq counter held a value (freq in kHz), the last one
-- running to the end of the trace.
--
-- The intervals come from counter_leading_intervals!, so equal values in a
-- row are thinned as that macro thins them. ucpu is looked up in `cpu` by
-- (machine_id, cpu); a track whose CPU is not in `cpu` gives no rows.

INCLUDE PERFETTO MODULE counters.intervals;

CREATE PERFETTO TABLE cpu_frequency_counters(
  id LONG,
  track_id JOINID(track.id),
  ts TIMESTAMP,
  dur DURATION,
  freq LONG,
  ucpu LONG,
  cpu LONG
) AS
SELECT iv.id, iv.track_id, iv.ts, iv.dur, CAST(iv.value AS INT) AS freq, c.ucpu, t.cpu
FROM counter_leading_intervals!((
  SELECT counter.*
  FROM counter
  JOIN cpu_counter_track AS freq_track ON freq_track.id = counter.track_id
  WHERE freq_track.name = 'cpufreq'
)) AS iv
JOIN cpu_counter_track AS t ON t.id = iv.track_id
JOIN cpu AS c ON c.machine_id IS t.machine_id AND c.cpu = t.cpu;
