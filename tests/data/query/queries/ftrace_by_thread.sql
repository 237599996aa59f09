-- ftrace_event, whole table: per event name, CPU and thread, how many
-- events and the first/last timestamp.
select e.name, e.cpu, t.tid, count(*) as events, min(e.ts) as first_ts,
       max(e.ts) as last_ts
from ftrace_event e left join thread t using (utid)
group by e.name, e.cpu, t.tid
order by e.name, e.cpu, t.tid;
