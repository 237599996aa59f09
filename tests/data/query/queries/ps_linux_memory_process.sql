-- memory_rss_and_swap_per_process: the first 100 rows, all columns (none unless the trace has process_stats
-- memory counters).
INCLUDE PERFETTO MODULE linux.memory.process;
SELECT * FROM memory_rss_and_swap_per_process ORDER BY upid, ts LIMIT 100;
