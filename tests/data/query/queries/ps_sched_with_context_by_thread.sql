-- sched.with_context: sched_with_thread_process per thread and process.
INCLUDE PERFETTO MODULE sched.with_context;
SELECT utid, upid, thread_name, process_name, count(*) AS slices, sum(dur) AS dur, sum(cpu) AS sum_cpu,
  sum(priority) AS sum_priority, count(DISTINCT end_state) AS end_states
FROM sched_with_thread_process
GROUP BY utid, upid, thread_name, process_name
ORDER BY utid, upid
LIMIT 190;
