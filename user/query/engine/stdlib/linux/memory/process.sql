-- Per-process memory over time: memory_rss_and_swap_per_process has, for each
-- process, one row per stretch of time in which none of its anon, file and
-- shmem RSS and swap counters took a new sample, with those values and their
-- sums.
--
-- Each of the four series is a table of intervals per process; outer span
-- joins partitioned by process cut the time at every sample of any of them.
-- A piece no series covers is left out, and a series not covering a piece
-- gives NULL. Two samples of a series at one instant give a piece of 0 ns
-- for the first, as upstream's do.

INCLUDE PERFETTO MODULE linux.memory.general;

CREATE PERFETTO TABLE _memory_anon_rss AS
SELECT ts, dur, upid, CAST(value AS INT) AS anon_rss
FROM _all_counters_per_process WHERE name = 'mem.rss.anon';

CREATE PERFETTO TABLE _memory_file_rss AS
SELECT ts, dur, upid, CAST(value AS INT) AS file_rss
FROM _all_counters_per_process WHERE name = 'mem.rss.file';

CREATE PERFETTO TABLE _memory_shmem_rss AS
SELECT ts, dur, upid, CAST(value AS INT) AS shmem_rss
FROM _all_counters_per_process WHERE name = 'mem.rss.shmem';

CREATE PERFETTO TABLE _memory_swap AS
SELECT ts, dur, upid, CAST(value AS INT) AS swap
FROM _all_counters_per_process WHERE name = 'mem.swap';

CREATE VIRTUAL TABLE _memory_anon_and_file
USING SPAN_OUTER_JOIN(_memory_anon_rss PARTITIONED upid, _memory_file_rss PARTITIONED upid);

CREATE VIRTUAL TABLE _memory_rss
USING SPAN_OUTER_JOIN(_memory_anon_and_file PARTITIONED upid, _memory_shmem_rss PARTITIONED upid);

CREATE VIRTUAL TABLE _memory_rss_and_swap
USING SPAN_OUTER_JOIN(_memory_rss PARTITIONED upid, _memory_swap PARTITIONED upid);

CREATE PERFETTO TABLE _memory_rss_and_swap_per_process_table AS
SELECT ts, dur, upid, anon_rss, file_rss, shmem_rss, swap
FROM _memory_rss_and_swap
ORDER BY upid, ts;

CREATE PERFETTO VIEW memory_rss_and_swap_per_process(
  ts TIMESTAMP,
  dur DURATION,
  upid JOINID(process.id),
  pid LONG,
  process_name STRING,
  anon_rss LONG,
  file_rss LONG,
  shmem_rss LONG,
  rss LONG,
  swap LONG,
  anon_rss_and_swap LONG,
  rss_and_swap LONG
) AS
SELECT
  m.ts,
  m.dur,
  m.upid,
  p.pid,
  p.name AS process_name,
  m.anon_rss,
  m.file_rss,
  m.shmem_rss,
  -- anon and file RSS are always reported together, so a NULL among them is
  -- a real gap and makes the sums NULL; shmem and swap are often never
  -- reported at all, so their absence counts as 0.
  m.file_rss + m.anon_rss + coalesce(m.shmem_rss, 0) AS rss,
  m.swap,
  m.anon_rss + coalesce(m.swap, 0) AS anon_rss_and_swap,
  m.anon_rss + m.file_rss + coalesce(m.shmem_rss, 0) + coalesce(m.swap, 0) AS rss_and_swap
FROM _memory_rss_and_swap_per_process_table AS m
JOIN process AS p USING (upid);
