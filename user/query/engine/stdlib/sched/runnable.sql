-- For each Running thread_state, the thread's runnable state before it:
-- sched_previous_runnable_on_thread (id, prev_runnable_id,
-- prev_wakeup_runnable_id), one row per Running state, by id.
--
-- Only the thread's 'R', 'R+' and 'Running' states with a known end
-- (dur != -1) count, taken in id order (a thread's states get increasing ids).
-- prev_runnable_id is the latest earlier R or R+ state, whether or not a
-- Running state came between; prev_wakeup_runnable_id the latest state up
-- to this one that has a waker outside interrupt context.

CREATE PERFETTO TABLE sched_previous_runnable_on_thread(
  id JOINID(thread_state.id),
  prev_runnable_id JOINID(thread_state.id),
  prev_wakeup_runnable_id JOINID(thread_state.id)
)
AS
SELECT id, prev_runnable_id, prev_wakeup_runnable_id
FROM (
  SELECT
    id,
    state,
    -- The running max up to this row: as this row is Running, the R/R+ filter
    -- makes it the latest earlier one.
    max(id) FILTER (WHERE state != 'Running') OVER by_thread AS prev_runnable_id,
    max(id) FILTER (WHERE waker_utid IS NOT NULL AND (irq_context IS NULL OR irq_context != 1))
      OVER by_thread AS prev_wakeup_runnable_id
  FROM thread_state
  WHERE state GLOB 'R*' AND dur != -1
  WINDOW by_thread AS (PARTITION BY utid ORDER BY id)
)
WHERE state = 'Running'
ORDER BY id;
