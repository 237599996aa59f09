-- Per-process memory over time: memory_rss_and_swap_per_process has, for each
-- process, one row per stretch of time in which none of its anon, file and
-- shmem RSS and swap counters took a new sample, with those values and their
-- sums.
--
-- Upstream builds this with a chain of SPAN_OUTER_JOINs; here each process's
-- time is cut at every sample start and end of the four series, and each
-- piece takes the value of every series whose sample covers it. A piece no
-- series covers is left out, and a series not covering a piece gives NULL,
-- as in an outer span join.

INCLUDE PERFETTO MODULE linux.memory.general;

CREATE PERFETTO TABLE _memory_series_samples AS
SELECT
  upid,
  ts,
  ts + dur AS ts_end,
  CASE name WHEN 'mem.rss.anon' THEN 0 WHEN 'mem.rss.file' THEN 1 WHEN 'mem.rss.shmem' THEN 2 ELSE 3 END
    AS series,
  value,
  -- Ranked per process so that the pieces below can point at a sample; ties
  -- at one ts rank the longer (the non-empty) sample last.
  row_number() OVER (PARTITION BY upid ORDER BY ts, dur, track_id) AS seq
FROM _all_counters_per_process
WHERE name IN ('mem.rss.anon', 'mem.rss.file', 'mem.rss.shmem', 'mem.swap');

-- Every point where some series changes, and for each series the last sample
-- that started at or before it. As a series' samples do not overlap, that
-- sample is the only one that can cover the piece starting there.
CREATE PERFETTO TABLE _memory_series_pieces AS
WITH
  cuts AS (
    SELECT upid, ts FROM _memory_series_samples
    UNION
    SELECT upid, ts_end AS ts FROM _memory_series_samples
  ),
  stream AS (
    SELECT upid, ts, 0 AS is_cut, series, seq FROM _memory_series_samples
    UNION ALL
    SELECT upid, ts, 1 AS is_cut, NULL AS series, NULL AS seq FROM cuts
  ),
  latest AS (
    SELECT
      upid,
      ts,
      is_cut,
      max(CASE series WHEN 0 THEN seq END) OVER upto AS anon_seq,
      max(CASE series WHEN 1 THEN seq END) OVER upto AS file_seq,
      max(CASE series WHEN 2 THEN seq END) OVER upto AS shmem_seq,
      max(CASE series WHEN 3 THEN seq END) OVER upto AS swap_seq
    FROM stream
    -- Samples sort before the cut at their own ts, so that they count there.
    WINDOW upto AS (PARTITION BY upid ORDER BY ts, is_cut ROWS UNBOUNDED PRECEDING)
  )
SELECT upid, ts, lead(ts) OVER (PARTITION BY upid ORDER BY ts) AS ts_end, anon_seq, file_seq, shmem_seq, swap_seq
FROM latest
WHERE is_cut;

CREATE PERFETTO TABLE _memory_rss_and_swap_per_process_table AS
SELECT
  p.ts,
  p.ts_end - p.ts AS dur,
  p.upid,
  CAST(anon.value AS INT) AS anon_rss,
  CAST(file.value AS INT) AS file_rss,
  CAST(shmem.value AS INT) AS shmem_rss,
  CAST(swap.value AS INT) AS swap
FROM _memory_series_pieces AS p
LEFT JOIN _memory_series_samples AS anon
  ON anon.upid = p.upid AND anon.seq = p.anon_seq AND anon.ts_end > p.ts
LEFT JOIN _memory_series_samples AS file
  ON file.upid = p.upid AND file.seq = p.file_seq AND file.ts_end > p.ts
LEFT JOIN _memory_series_samples AS shmem
  ON shmem.upid = p.upid AND shmem.seq = p.shmem_seq AND shmem.ts_end > p.ts
LEFT JOIN _memory_series_samples AS swap
  ON swap.upid = p.upid AND swap.seq = p.swap_seq AND swap.ts_end > p.ts
WHERE p.ts_end IS NOT NULL
  AND coalesce(anon.seq, file.seq, shmem.seq, swap.seq) IS NOT NULL
ORDER BY p.upid, p.ts;

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
