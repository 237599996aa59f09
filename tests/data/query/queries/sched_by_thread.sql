-- sched, whole table: per thread, CPU and end state, how many slices, their
-- total duration and first/last start.
select t.tid, t.name as thread_name, s.cpu, s.end_state, count(*) as slices,
       sum(s.dur) as total_dur, min(s.ts) as first_ts, max(s.ts) as last_ts,
       min(s.priority) as min_priority, max(s.priority) as max_priority
from sched s left join thread t using (utid)
group by t.tid, t.name, s.cpu, s.end_state
order by t.tid, t.name, s.cpu, s.end_state;
