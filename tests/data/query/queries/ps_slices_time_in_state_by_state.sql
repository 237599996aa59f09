-- thread_slice_time_in_state summed per thread and state.
INCLUDE PERFETTO MODULE slices.time_in_state;
SELECT utid, thread_name, upid, process_name, state, io_wait, blocked_function,
  count(*) AS slices, sum(dur) AS dur
FROM thread_slice_time_in_state
GROUP BY utid, state, io_wait, blocked_function
ORDER BY utid, state, io_wait, blocked_function;
