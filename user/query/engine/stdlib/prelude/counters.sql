-- The counter views upstream offers without an INCLUDE that sluice's engine
-- does not make itself: `counters` (every counter value with its track's
-- name and unit), thread_counter_track and perf_counter_track.

-- Sorted by ts as upstream's; rows of equal ts in no promised order.
CREATE PERFETTO VIEW counters(
  id ID,
  ts TIMESTAMP,
  track_id JOINID(track.id),
  value DOUBLE,
  arg_set_id LONG,
  name STRING,
  unit STRING
) AS
SELECT c.id, c.ts, c.track_id, c.value, c.arg_set_id, t.name, t.unit
FROM counter AS c
JOIN counter_track AS t ON t.id = c.track_id
ORDER BY c.ts;

-- Counter tracks of one thread: a `utid` among the track's dimensions.
-- (sluice's importer makes none yet; per-thread counters would land here.)
CREATE PERFETTO VIEW thread_counter_track(
  id ID(track.id),
  name STRING,
  type STRING,
  parent_id JOINID(track.id),
  source_arg_set_id ARGSETID,
  machine_id JOINID(machine.id),
  unit STRING,
  description STRING,
  utid LONG
) AS
SELECT
  t.id, t.name, t.type, t.parent_id, t.source_arg_set_id, t.machine_id, t.unit, t.description,
  a.int_value AS utid
FROM counter_track AS t
JOIN args AS a ON a.arg_set_id = t.dimension_arg_set_id
WHERE a.key = 'utid';

-- Counter tracks of perf counters (per CPU or global), by track type. No
-- trace sluice imports has them today: the view is here so that queries
-- written for upstream find it.
CREATE PERFETTO VIEW perf_counter_track(
  id ID(track.id),
  name STRING,
  type STRING,
  parent_id JOINID(track.id),
  source_arg_set_id ARGSETID,
  machine_id JOINID(machine.id),
  unit STRING,
  description STRING,
  perf_session_id LONG,
  cpu LONG,
  is_timebase BOOL
) AS
SELECT
  id, name, type, parent_id, source_arg_set_id, machine_id, unit, description,
  extract_arg(dimension_arg_set_id, 'perf_session_id') AS perf_session_id,
  extract_arg(dimension_arg_set_id, 'cpu') AS cpu,
  extract_arg(source_arg_set_id, 'is_timebase') AS is_timebase
FROM counter_track
WHERE type IN ('perf_cpu_counter', 'perf_global_counter');
