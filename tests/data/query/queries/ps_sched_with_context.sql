-- sched.with_context: the first 60 and last 40 rows of
-- sched_with_thread_process (all columns, in upstream's order).
INCLUDE PERFETTO MODULE sched.with_context;
SELECT * FROM (SELECT * FROM sched_with_thread_process ORDER BY id LIMIT 60)
UNION ALL
SELECT * FROM (SELECT * FROM sched_with_thread_process ORDER BY id DESC LIMIT 40)
ORDER BY id;
