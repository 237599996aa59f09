-- sched.latency: the 100 first rows of sched_latency_for_running_interval.
INCLUDE PERFETTO MODULE sched.latency;
SELECT * FROM sched_latency_for_running_interval ORDER BY thread_state_id LIMIT 100;
