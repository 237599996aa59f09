-- thread_state, whole table: per thread and state, how many intervals, their
-- total duration, first/last start, how many had a waker and on which CPUs
-- the thread ran.
select t.tid, s.state, count(*) as intervals, sum(s.dur) as total_dur,
       min(s.ts) as first_ts, max(s.ts) as last_ts,
       count(s.waker_utid) as with_waker, sum(w.tid) as sum_waker_tid,
       count(s.io_wait) as with_io_wait, sum(s.io_wait) as io_waits,
       count(s.cpu) as with_cpu, sum(s.cpu) as sum_cpu
from thread_state s
left join thread t on t.utid = s.utid
left join thread w on w.utid = s.waker_utid
group by t.tid, s.state
order by t.tid, s.state;
