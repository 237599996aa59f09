-- thread_state: the first 300 and the last 100 intervals, waker by tid.
select * from (
  select s.ts, s.dur, s.cpu, t.tid, s.state, s.io_wait, w.tid as waker_tid
  from thread_state s
  left join thread t on t.utid = s.utid
  left join thread w on w.utid = s.waker_utid
  order by s.ts, t.tid, s.dur, s.cpu, s.state, s.io_wait, w.tid
  limit 300)
union
select * from (
  select s.ts, s.dur, s.cpu, t.tid, s.state, s.io_wait, w.tid as waker_tid
  from thread_state s
  left join thread t on t.utid = s.utid
  left join thread w on w.utid = s.waker_utid
  order by s.ts desc, t.tid desc, s.dur desc, s.cpu desc, s.state desc, s.io_wait desc,
           w.tid desc
  limit 100)
order by ts, tid, dur, cpu, state, io_wait, waker_tid;
