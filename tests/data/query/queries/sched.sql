-- sched: the first 300 and the last 100 slices of the trace, every column that
-- must match upstream (thread by tid and name, never utid).
-- The ORDER BY covers every projected column, so the output is one total
-- order whatever the engine's row ids.
select * from (
  select s.ts, s.dur, s.cpu, t.tid, t.name as thread_name, s.end_state, s.priority
  from sched s left join thread t using (utid)
  order by s.ts, s.cpu, t.tid, s.dur, t.name, s.end_state, s.priority
  limit 300)
union
select * from (
  select s.ts, s.dur, s.cpu, t.tid, t.name as thread_name, s.end_state, s.priority
  from sched s left join thread t using (utid)
  order by s.ts desc, s.cpu desc, t.tid desc, s.dur desc, t.name desc, s.end_state desc,
           s.priority desc
  limit 100)
order by ts, cpu, tid, dur, thread_name, end_state, priority;
