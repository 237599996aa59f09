-- Helpers for the linux.cpu.utilization modules (no public tables): the trace
-- cut into fixed periods, CPU time summed per period, and every sched slice
-- cut at the CPU's frequency changes, with the frequency it ran at.

INCLUDE PERFETTO MODULE linux.cpu.frequency;

-- Start of the period of length `size` holding `ts` (trace timestamps are not
-- negative, so integer division floors).
CREATE PERFETTO FUNCTION _partition_start(ts TIMESTAMP, size LONG) RETURNS LONG
AS SELECT ($ts / $size) * $size;

-- How many periods of length `size` it takes to cover the trace, from the one
-- holding trace_start() to the one holding trace_end().
CREATE PERFETTO FUNCTION _partition_count(size LONG) RETURNS LONG
AS SELECT (_partition_start(trace_end(), $size) - _partition_start(trace_start(), $size)) / $size + 1;

-- The periods [ts, ts_end) of length `size` covering the trace. Upstream
-- numbers them with sched's row ids, so a trace with fewer sched rows than
-- periods gets only as many periods as it has rows; the same limit is kept.
CREATE PERFETTO FUNCTION _partitions(size LONG) RETURNS TABLE(ts TIMESTAMP, ts_end LONG)
AS
WITH RECURSIVE
  bounds AS (
    SELECT _partition_start(trace_start(), $size) AS first_ts,
      min(_partition_count($size), (SELECT count(*) FROM sched)) AS n
  ),
  k(i) AS (
    SELECT 0 FROM bounds WHERE n > 0
    UNION ALL
    SELECT i + 1 FROM k, bounds WHERE i + 1 < n
  )
SELECT first_ts + i * $size AS ts, first_ts + (i + 1) * $size AS ts_end
FROM k, bounds;

-- Each interval (columns ts, ts_end) in the one period that holds its start,
-- clipped to that period's end. Whatever runs past the period's end is not
-- carried into the next period: upstream drops it, and so does this.
CREATE PERFETTO MACRO _interval_partitions(partitions TableOrSubquery, intervals TableOrSubquery)
RETURNS TableOrSubquery
AS (
  SELECT p.ts AS partition_ts, min(i.ts_end, p.ts_end) AS ts_end, max(i.ts, p.ts) AS ts
  FROM $intervals AS i
  JOIN $partitions AS p ON p.ts <= i.ts AND i.ts < p.ts_end
);

-- CPU time per period of length `interval` of the slices in `sched_table`
-- (columns ts, ts_end): unnormalized_utilization is the number of CPUs kept
-- busy on average, utilization the same divided by the number of CPUs
-- (highest sched CPU number + 1). Periods without a slice start get no row.
CREATE PERFETTO MACRO _cpu_avg_utilization_per_period(interval Expr, sched_table TableOrSubquery)
RETURNS TableOrSubquery
AS (
  SELECT
    partition_ts AS ts,
    sum(ts_end - ts) / (CAST($interval AS REAL) * (SELECT max(cpu) + 1 FROM sched)) AS utilization,
    sum(ts_end - ts) / CAST($interval AS REAL) AS unnormalized_utilization
  FROM _interval_partitions!(_partitions($interval), $sched_table)
  GROUP BY partition_ts
);

CREATE PERFETTO VIEW _cpu_freq_for_metrics AS
SELECT id, ts, dur, cpu, ucpu, freq
FROM cpu_frequency_counters
WHERE freq IS NOT NULL;

-- Finished sched slices of threads other than the idle ones.
CREATE PERFETTO VIEW _sched_without_id AS
SELECT ts, dur, utid, ucpu
FROM sched
WHERE utid NOT IN (SELECT utid FROM thread WHERE is_idle) AND dur != -1;

-- The sched slices and the frequency intervals of each CPU in one time-ordered
-- stream, numbered per CPU: for a slice, freq_seq is the last frequency
-- interval that began at or before it (a frequency sorts before a slice
-- starting at the same ts); for a frequency interval, sched_seq is the last
-- slice that began strictly before it.
CREATE PERFETTO TABLE _cpu_freq_sched_stream AS
WITH
  freq AS (
    SELECT ucpu, ts, dur, id, cpu, freq, row_number() OVER (PARTITION BY ucpu ORDER BY ts, id) AS seq
    FROM _cpu_freq_for_metrics
  ),
  slices AS (
    SELECT ucpu, ts, dur, utid, row_number() OVER (PARTITION BY ucpu ORDER BY ts, dur) AS seq
    FROM _sched_without_id
  ),
  stream AS (
    SELECT ucpu, ts, dur, 0 AS is_slice, seq, id AS counter_id, cpu, freq, NULL AS utid FROM freq
    UNION ALL
    SELECT ucpu, ts, dur, 1 AS is_slice, seq, NULL, NULL, NULL, utid FROM slices
  )
SELECT
  *,
  coalesce(max(CASE WHEN NOT is_slice THEN seq END) OVER upto, 0) AS freq_seq,
  coalesce(max(CASE WHEN is_slice THEN seq END) OVER upto, 0) AS sched_seq
FROM stream
WINDOW upto AS (PARTITION BY ucpu ORDER BY ts, is_slice, seq ROWS UNBOUNDED PRECEDING);

-- Upstream's SPAN_LEFT_JOIN(_sched_without_id PARTITIONED ucpu,
-- _cpu_freq_for_metrics PARTITIONED ucpu): each slice cut where the CPU's
-- frequency changes, with freq, cpu and counter_id NULL where no frequency is
-- known (before the CPU's first cpufreq event, or on a CPU without any). A
-- piece starts either at its slice's start or at a frequency change inside
-- the slice, and ends at the next frequency change or the slice's end (a
-- trace without cpufreq events gets its slices whole, with NULL freq). id
-- numbers the pieces from 0 in (ucpu, ts) order, as upstream's row ids.
CREATE PERFETTO TABLE _cpu_freq_per_thread_pieces AS
WITH
  freq AS (SELECT ucpu, seq, ts, counter_id, cpu, freq FROM _cpu_freq_sched_stream WHERE NOT is_slice),
  slices AS (SELECT ucpu, seq, ts, ts + dur AS ts_end, utid, freq_seq FROM _cpu_freq_sched_stream WHERE is_slice),
  -- Pieces that start where their slice starts.
  at_slice_start AS (
    SELECT
      s.ucpu,
      s.ts,
      min(s.ts_end, coalesce(next_f.ts, s.ts_end)) - s.ts AS dur,
      s.utid,
      f.counter_id,
      f.cpu,
      f.freq
    FROM slices AS s
    LEFT JOIN freq AS f ON f.ucpu = s.ucpu AND f.seq = s.freq_seq
    LEFT JOIN freq AS next_f ON next_f.ucpu = s.ucpu AND next_f.seq = s.freq_seq + 1
  ),
  -- Pieces that start at a frequency change inside a slice.
  at_freq_change AS (
    SELECT
      f.ucpu,
      f.ts,
      min(s.ts_end, coalesce(next_f.ts, s.ts_end)) - f.ts AS dur,
      s.utid,
      f.counter_id,
      f.cpu,
      f.freq
    FROM _cpu_freq_sched_stream AS f
    JOIN slices AS s ON s.ucpu = f.ucpu AND s.seq = f.sched_seq
    LEFT JOIN freq AS next_f ON next_f.ucpu = f.ucpu AND next_f.seq = f.seq + 1
    WHERE NOT f.is_slice AND f.ts < s.ts_end
  )
SELECT ucpu, ts, dur, utid, counter_id, cpu, freq
FROM (SELECT * FROM at_slice_start UNION ALL SELECT * FROM at_freq_change);

CREATE PERFETTO TABLE _cpu_freq_per_thread AS
SELECT row_number() OVER (ORDER BY ucpu, ts) - 1 AS id, ts, dur, ucpu, cpu, utid, freq, counter_id
FROM _cpu_freq_per_thread_pieces
ORDER BY ucpu, ts;
