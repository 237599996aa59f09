-- CPU cycles per thread and CPU: cpu_cycles_per_thread_per_cpu sums, for each
-- thread on each CPU, the time it ran and the cycles that time was worth at the
-- CPU's frequency; cpu_cycles_per_thread_per_cpu_in_interval does the same
-- within one interval. It needs sched_switch and cpu_frequency events.
--
-- All of it is integer arithmetic on purpose (ns x kHz / 1000 = millicycles),
-- as upstream computes it. runtime counts time at unknown frequency too;
-- avg_freq divides by all of runtime in the whole-trace table but only by the
-- time at known frequency in the interval one, as upstream does.

INCLUDE PERFETTO MODULE linux.cpu.utilization.general;

-- The pieces of _cpu_freq_per_thread that overlap [ts, ts + dur), clipped to
-- it: a piece or an interval of length 0 counts as the instant it starts at,
-- and two intervals that only touch do not overlap.
CREATE PERFETTO FUNCTION _cpu_freq_per_thread_in_interval(ts TIMESTAMP, dur LONG)
RETURNS TABLE(id LONG, ts TIMESTAMP, dur DURATION)
AS
SELECT
  c.id,
  max(c.ts, $ts) AS ts,
  max(0, min(c.ts + c.dur, $ts + $dur) - max(c.ts, $ts)) AS dur
FROM _cpu_freq_per_thread AS c
WHERE CASE
  WHEN c.dur > 0 AND $dur > 0 THEN c.ts < $ts + $dur AND c.ts + c.dur > $ts
  WHEN $dur > 0 THEN $ts <= c.ts AND c.ts < $ts + $dur
  WHEN c.dur > 0 THEN c.ts <= $ts AND $ts < c.ts + c.dur
  ELSE c.ts = $ts
END;

CREATE PERFETTO TABLE cpu_cycles_per_thread_per_cpu(
  utid JOINID(thread.id),
  ucpu JOINID(cpu.id),
  cpu LONG,
  millicycles LONG,
  megacycles LONG,
  runtime DURATION,
  min_freq LONG,
  max_freq LONG,
  avg_freq LONG
) AS
SELECT
  f.utid,
  f.ucpu,
  cpu.cpu,
  CAST(sum(f.dur * f.freq / 1000) AS INT) AS millicycles,
  CAST(sum(f.dur * f.freq / 1000) / 1e9 AS INT) AS megacycles,
  sum(f.dur) AS runtime,
  min(f.freq) AS min_freq,
  max(f.freq) AS max_freq,
  CAST(sum(f.dur * f.freq / 1000) / (sum(f.dur) / 1000) AS INT) AS avg_freq
FROM _cpu_freq_per_thread AS f
JOIN cpu USING (ucpu)
GROUP BY f.utid, f.ucpu;

CREATE PERFETTO FUNCTION cpu_cycles_per_thread_per_cpu_in_interval(ts TIMESTAMP, dur LONG)
RETURNS TABLE(
  utid JOINID(thread.id),
  ucpu JOINID(cpu.id),
  cpu LONG,
  millicycles LONG,
  megacycles LONG,
  runtime DURATION,
  min_freq LONG,
  max_freq LONG,
  avg_freq LONG
) AS
SELECT
  f.utid,
  f.ucpu,
  cpu.cpu,
  CAST(sum(ii.dur * f.freq / 1000) AS INT) AS millicycles,
  CAST(sum(ii.dur * f.freq / 1000) / 1e9 AS INT) AS megacycles,
  sum(ii.dur) AS runtime,
  min(f.freq) AS min_freq,
  max(f.freq) AS max_freq,
  CAST(sum(ii.dur * f.freq / 1000) / (sum(CASE WHEN f.freq IS NOT NULL THEN ii.dur END) / 1000) AS INT) AS avg_freq
FROM _cpu_freq_per_thread_in_interval($ts, $dur) AS ii
JOIN _cpu_freq_per_thread AS f USING (id)
JOIN cpu USING (ucpu)
GROUP BY f.utid, f.ucpu;
