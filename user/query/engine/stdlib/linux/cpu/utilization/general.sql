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

-- Each interval (columns ts, ts_end) in the one period of length `size` that
-- holds its start, clipped to that period's end, for the intervals starting
-- in one of `partitions` (_partitions(size)). Whatever runs past the
-- period's end is not carried into the next period: upstream drops it, and
-- so does this. The period is computed, not joined: a join of every
-- interval against the periods compared each with all of them.
CREATE PERFETTO MACRO _interval_partitions(size Expr, partitions TableOrSubquery, intervals TableOrSubquery)
RETURNS TableOrSubquery
AS (
  SELECT
    (i.ts / (SELECT $size)) * (SELECT $size) AS partition_ts,
    min(i.ts_end, (i.ts / (SELECT $size) + 1) * (SELECT $size)) AS ts_end,
    i.ts AS ts
  FROM $intervals AS i
  WHERE i.ts >= (SELECT min(ts) FROM $partitions) AND i.ts < (SELECT max(ts_end) FROM $partitions)
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
  FROM _interval_partitions!($interval, _partitions($interval), $sched_table)
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

-- Each slice cut where its CPU's frequency changes, with the frequency it ran
-- at: freq, cpu and counter_id are NULL where no frequency is known (before
-- the CPU's first cpufreq event, or on a CPU without any), as upstream's
-- SPAN_LEFT_JOIN of the two makes it (sluice's checks that neither side's
-- spans overlap within a CPU). The join's rows come by ucpu, then ts, and
-- its rowid numbers them in that order from 0: id is upstream's row id.
CREATE VIRTUAL TABLE _cpu_freq_per_thread_span_join USING SPAN_LEFT_JOIN(
  _sched_without_id PARTITIONED ucpu,
  _cpu_freq_for_metrics PARTITIONED ucpu);

CREATE PERFETTO TABLE _cpu_freq_per_thread AS
SELECT rowid AS id, ts, dur, ucpu, cpu, utid, freq, id AS counter_id
FROM _cpu_freq_per_thread_span_join;
