-- sched.runnable: the first 100 rows of sched_previous_runnable_on_thread, as
-- upstream orders them (by id), without prev_wakeup_runnable_id (see
-- ps_sched_runnable.sql).
INCLUDE PERFETTO MODULE sched.runnable;
SELECT id, prev_runnable_id FROM sched_previous_runnable_on_thread LIMIT 100;
