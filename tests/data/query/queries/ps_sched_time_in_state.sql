-- sched.time_in_state: sched_time_in_state_for_thread, per thread and state.
INCLUDE PERFETTO MODULE sched.time_in_state;
SELECT * FROM sched_time_in_state_for_thread ORDER BY utid, state LIMIT 190;
