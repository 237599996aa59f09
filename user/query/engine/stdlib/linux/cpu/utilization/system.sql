-- Whole-system CPU use, like /proc/stat: cpu_utilization_per_second (and
-- cpu_utilization_per_period for any period), and the cycles run on all CPUs
-- together (cpu_cycles, cpu_cycles_in_interval) or per CPU
-- (cpu_cycles_per_cpu, cpu_cycles_per_cpu_in_interval), and the awake share
-- of an interval (cpu_utilization_in_interval).
--
-- Utilization counts each slice in the period it starts in, up to that
-- period's end (see linux.cpu.utilization.general), so the first and last
-- periods can read low. Slices still running at the end count as -1 ns, as
-- upstream's sched.ts_end = ts + dur makes them.
--
-- Awake time is the monotonic clock's share of a stretch (the boot clock
-- also runs in suspend): to_monotonic() of its ends, so it needs the
-- trace's clock snapshots; without them the awake columns are NULL, as
-- upstream's are.

INCLUDE PERFETTO MODULE linux.cpu.utilization.general;
INCLUDE PERFETTO MODULE linux.cpu.utilization.thread_cpu;
INCLUDE PERFETTO MODULE time.conversion;

CREATE PERFETTO FUNCTION cpu_utilization_per_period(interval LONG)
RETURNS TABLE(ts TIMESTAMP, utilization DOUBLE, unnormalized_utilization DOUBLE)
AS
SELECT *
FROM _cpu_avg_utilization_per_period!($interval, (
  SELECT ts, ts + dur AS ts_end
  FROM sched
  WHERE utid NOT IN (SELECT utid FROM thread WHERE is_idle)
));

CREATE PERFETTO TABLE cpu_utilization_per_second(
  ts TIMESTAMP,
  utilization DOUBLE,
  unnormalized_utilization DOUBLE
) AS
SELECT ts, utilization, unnormalized_utilization
FROM cpu_utilization_per_period(time_from_s(1));

CREATE PERFETTO TABLE cpu_cycles(
  millicycles LONG,
  megacycles LONG,
  runtime DURATION,
  min_freq LONG,
  max_freq LONG,
  avg_freq LONG
) AS
SELECT
  sum(millicycles) AS millicycles,
  CAST(sum(millicycles) / 1e9 AS INT) AS megacycles,
  sum(runtime) AS runtime,
  min(min_freq) AS min_freq,
  max(max_freq) AS max_freq,
  CAST(sum(millicycles) / (sum(runtime) / 1000) AS INT) AS avg_freq
FROM cpu_cycles_per_thread_per_cpu;

CREATE PERFETTO TABLE cpu_cycles_per_cpu(
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
  ucpu,
  cpu,
  sum(millicycles) AS millicycles,
  CAST(sum(millicycles) / 1e9 AS INT) AS megacycles,
  sum(runtime) AS runtime,
  min(min_freq) AS min_freq,
  max(max_freq) AS max_freq,
  CAST(sum(millicycles) / (sum(runtime) / 1000) AS INT) AS avg_freq
FROM cpu_cycles_per_thread_per_cpu
GROUP BY ucpu, cpu;

-- cpu is the CPU number of the CPU's pieces that ran at a known frequency,
-- NULL if none did. (Upstream reads it from an arbitrary piece of the CPU,
-- which may be one of unknown frequency and so NULL.)
CREATE PERFETTO FUNCTION cpu_cycles_per_cpu_in_interval(ts TIMESTAMP, dur LONG)
RETURNS TABLE(
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
  f.ucpu,
  max(f.cpu) AS cpu,
  CAST(sum(ii.dur * f.freq / 1000) AS INT) AS millicycles,
  CAST(sum(ii.dur * f.freq / 1000) / 1e9 AS INT) AS megacycles,
  sum(ii.dur) AS runtime,
  min(f.freq) AS min_freq,
  max(f.freq) AS max_freq,
  CAST(sum(ii.dur * f.freq / 1000) / (sum(CASE WHEN f.freq IS NOT NULL THEN ii.dur END) / 1000) AS INT) AS avg_freq
FROM _cpu_freq_per_thread_in_interval($ts, $dur) AS ii
JOIN _cpu_freq_per_thread AS f USING (id)
GROUP BY f.ucpu;

-- The cycles all CPUs ran within [ts, ts + dur), with the awake (monotonic)
-- time of the pieces that ran.
CREATE PERFETTO FUNCTION cpu_cycles_in_interval(ts TIMESTAMP, dur LONG)
RETURNS TABLE(
  millicycles LONG,
  megacycles LONG,
  runtime DURATION,
  awake_runtime DURATION,
  min_freq LONG,
  max_freq LONG,
  avg_freq LONG
) AS
SELECT
  CAST(sum(ii.dur * f.freq / 1000) AS INT) AS millicycles,
  CAST(sum(ii.dur * f.freq / 1000) / 1e9 AS INT) AS megacycles,
  sum(ii.dur) AS runtime,
  sum(to_monotonic(ii.ts + ii.dur) - to_monotonic(ii.ts)) AS awake_runtime,
  min(f.freq) AS min_freq,
  max(f.freq) AS max_freq,
  CAST(sum(ii.dur * f.freq / 1000) / (sum(CASE WHEN f.freq IS NOT NULL THEN ii.dur END) / 1000) AS INT) AS avg_freq
FROM _cpu_freq_per_thread_in_interval($ts, $dur) AS ii
JOIN _cpu_freq_per_thread AS f USING (id);

-- The share of [ts, ts + dur)'s awake time the CPUs ran, in percent: over
-- all CPUs (highest CPU number + 1) and unnormalized (one CPU's worth is
-- 100), rounded to 2 places as upstream.
CREATE PERFETTO FUNCTION cpu_utilization_in_interval(ts TIMESTAMP, dur LONG)
RETURNS TABLE(
  awake_dur LONG,
  awake_utilization DOUBLE,
  awake_unnormalized_utilization DOUBLE
) AS
WITH awake AS (SELECT to_monotonic($ts + $dur) - to_monotonic($ts) AS span)
SELECT
  c.awake_runtime AS awake_dur,
  round(c.awake_runtime * 100.0 / awake.span / (SELECT max(cpu) + 1 FROM cpu), 2) AS awake_utilization,
  round(c.awake_runtime * 100.0 / awake.span, 2) AS awake_unnormalized_utilization
FROM cpu_cycles_in_interval($ts, $dur) AS c, awake;
