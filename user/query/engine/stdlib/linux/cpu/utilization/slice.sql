-- CPU cycles per thread slice: cpu_cycles_per_thread_slice has one row per
-- thread slice with the cycles its thread ran during it, and
-- cpu_cycles_per_thread_slice_in_interval the same for the slices cut to
-- one interval. It needs sched_switch and cpu_frequency events.
--
-- The cycles are known only when the thread ran at a known frequency for the
-- whole slice (or the whole of its cut): otherwise, a slice the thread was
-- switched out in, or ran in before its CPU's first cpufreq event,
-- millicycles and megacycles are NULL, as upstream's are. Instants, slices
-- still open at the end and slices of the idle task have none either.

INCLUDE PERFETTO MODULE linux.cpu.utilization.general;
INCLUDE PERFETTO MODULE intervals.intersect;
INCLUDE PERFETTO MODULE slices.with_context;

CREATE PERFETTO TABLE _thread_slice_ran AS
SELECT id, ts, dur, utid FROM thread_slice WHERE dur > 0 AND utid > 0;

-- Where each such slice's thread ran at a known frequency: one piece per
-- (slice, run at one frequency). The interval function clips these pieces
-- rather than intersecting again: the pieces of a cut slice are the
-- slice's pieces cut the same way.
CREATE PERFETTO TABLE _thread_slice_freq_piece AS
SELECT ii.id_0 AS slice_id, ii.ts, ii.dur, f.freq
FROM _interval_intersect!((_thread_slice_ran, _cpu_freq_per_thread), (utid)) AS ii
JOIN _cpu_freq_per_thread AS f ON f.id = ii.id_1
WHERE f.freq IS NOT NULL;

CREATE PERFETTO TABLE cpu_cycles_per_thread_slice(
  id JOINID(slice.id),
  name STRING,
  utid JOINID(thread.id),
  thread_name STRING,
  upid JOINID(process.id),
  process_name STRING,
  millicycles LONG,
  megacycles LONG
) AS
WITH _cycles AS (
  SELECT
    slice_id,
    sum(dur) AS dur,
    CAST(sum(dur * freq / 1000) AS INT) AS millicycles,
    CAST(sum(dur * freq / 1000) / 1e9 AS INT) AS megacycles
  FROM _thread_slice_freq_piece
  GROUP BY slice_id
)
SELECT s.id, s.name, s.utid, s.thread_name, s.upid, s.process_name, c.millicycles, c.megacycles
FROM thread_slice AS s
LEFT JOIN _cycles AS c ON c.slice_id = s.id AND c.dur = s.dur;

CREATE PERFETTO FUNCTION cpu_cycles_per_thread_slice_in_interval(ts TIMESTAMP, dur DURATION)
RETURNS TABLE(
  id JOINID(slice.id),
  name STRING,
  utid JOINID(thread.id),
  thread_name STRING,
  upid JOINID(process.id),
  process_name STRING,
  millicycles LONG,
  megacycles LONG
) AS
WITH
  _cut AS (
    SELECT ii.id, ii.dur
    FROM _interval_intersect_single!($ts, $dur, _thread_slice_ran) AS ii
  ),
  _clipped AS (
    SELECT p.slice_id, max(0, min(p.ts + p.dur, $ts + $dur) - max(p.ts, $ts)) AS dur, p.freq
    FROM _thread_slice_freq_piece AS p
    JOIN _cut ON _cut.id = p.slice_id
    WHERE p.ts < $ts + $dur AND p.ts + p.dur > $ts
  ),
  _cycles AS (
    SELECT
      slice_id,
      sum(dur) AS dur,
      CAST(sum(dur * freq / 1000) AS INT) AS millicycles,
      CAST(sum(dur * freq / 1000) / 1e9 AS INT) AS megacycles
    FROM _clipped
    GROUP BY slice_id
  )
SELECT s.id, s.name, s.utid, s.thread_name, s.upid, s.process_name, c.millicycles, c.megacycles
FROM _cut
JOIN thread_slice AS s USING (id)
LEFT JOIN _cycles AS c ON c.slice_id = _cut.id AND c.dur = _cut.dur;
