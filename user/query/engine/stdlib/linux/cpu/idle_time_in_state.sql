-- Time in each sysfs cpuidle state, as percentages between two samples:
-- linux_per_cpu_idle_time_in_state_counters per CPU and
-- linux_cpu_idle_time_in_state_counters summed over the CPUs of a machine,
-- each with a computed 'C0' (not idle) state.
--
-- The cpu_idle_state counters are cumulative residencies in microseconds, so
-- a row is the difference between a sample and the previous sample of its
-- track; a track's first sample only serves as a base. time_slice is the time
-- between the two samples in whole microseconds. C0 is whatever the idle
-- states leave of that time, floored at 0 (reals, as upstream's: a
-- clamped 100 or 0 is 100.0 or 0.0). Its time_slice is that of any one
-- state of the (ts, cpu) group: the states of a CPU are sampled together.

INCLUDE PERFETTO MODULE time.conversion;

CREATE PERFETTO TABLE linux_per_cpu_idle_time_in_state_counters(
  ts TIMESTAMP,
  machine_id JOINID(machine.id),
  state STRING,
  cpu LONG,
  idle_percentage DOUBLE,
  total_residency DOUBLE,
  time_slice LONG
) AS
WITH
  deltas AS (
    SELECT
      c.ts,
      t.machine_id,
      extract_arg(t.dimension_arg_set_id, 'state') AS state,
      extract_arg(t.dimension_arg_set_id, 'cpu') AS cpu,
      c.value - lag(c.value) OVER per_track AS total_residency,
      time_to_us(c.ts - lag(c.ts) OVER per_track) AS time_slice
    FROM counter AS c
    JOIN track AS t ON t.id = c.track_id
    WHERE t.type = 'cpu_idle_state'
    WINDOW per_track AS (PARTITION BY c.track_id ORDER BY c.ts)
  )
SELECT
  ts,
  machine_id,
  state,
  cpu,
  min(100.0, total_residency / time_slice * 100) AS idle_percentage,
  total_residency,
  time_slice
FROM deltas
WHERE time_slice IS NOT NULL
UNION ALL
SELECT
  ts,
  machine_id,
  'C0' AS state,
  cpu,
  max(0.0, (time_slice - sum(total_residency)) / time_slice * 100) AS idle_percentage,
  max(0.0, time_slice - sum(total_residency)) AS total_residency,
  time_slice
FROM deltas
WHERE time_slice IS NOT NULL
GROUP BY ts, cpu, machine_id;

CREATE PERFETTO TABLE linux_cpu_idle_time_in_state_counters(
  ts TIMESTAMP,
  machine_id JOINID(machine.id),
  state STRING,
  idle_percentage DOUBLE,
  total_residency DOUBLE,
  time_slice LONG
) AS
SELECT
  ts,
  machine_id,
  state,
  min(100.0, sum(total_residency) / sum(time_slice) * 100) AS idle_percentage,
  sum(total_residency) AS total_residency,
  sum(time_slice) AS time_slice
FROM linux_per_cpu_idle_time_in_state_counters
GROUP BY ts, state, machine_id;
