-- sched.time_in_state: sched_percentage_of_time_in_state, per thread.
INCLUDE PERFETTO MODULE sched.time_in_state;
SELECT * FROM sched_percentage_of_time_in_state ORDER BY utid LIMIT 190;
