-- thread_slice_time_in_state: the first 150 rows.
INCLUDE PERFETTO MODULE slices.time_in_state;
SELECT * FROM thread_slice_time_in_state ORDER BY id, state, io_wait, blocked_function LIMIT 150;
