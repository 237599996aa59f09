-- Each wakeup's waker: the waker's thread and its own thread_state row (its
-- Running state when it woke the thread), by row.
select id, ts, utid, state, waker_utid, waker_id, irq_context
from thread_state
where waker_utid is not null
order by id
limit 400;
