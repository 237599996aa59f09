-- cpu_track: the slice tracks of one CPU (a `cpu` among the track's
-- dimensions: the IRQ and softirq tracks), as upstream offers it without an
-- INCLUDE.

-- Counter tracks with a cpu (cpufreq, cpuidle) are cpu_counter_track's, not
-- these: upstream picks slice tracks by their event type, which sluice's
-- `track` does not show, so here a track is a slice track when it is no
-- counter track.
CREATE PERFETTO VIEW cpu_track(
  id ID(track.id),
  name STRING,
  type STRING,
  parent_id JOINID(track.id),
  source_arg_set_id ARGSETID,
  machine_id JOINID(machine.id),
  cpu LONG
) AS
SELECT t.id, t.name, t.type, t.parent_id, t.source_arg_set_id, t.machine_id, a.int_value AS cpu
FROM track AS t
JOIN args AS a ON a.arg_set_id = t.dimension_arg_set_id
WHERE a.key = 'cpu' AND t.id NOT IN (SELECT id FROM counter_track);
