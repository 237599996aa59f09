-- thread_slice_cpu_time: the first 150 rows.
INCLUDE PERFETTO MODULE slices.cpu_time;
SELECT * FROM thread_slice_cpu_time ORDER BY id LIMIT 150;
