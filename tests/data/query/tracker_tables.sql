select s.ts, s.dur, s.cpu, t.tid, t.name, s.end_state, s.priority from sched s join thread t using(utid) order by s.ts, s.cpu;
select ts.ts, ts.dur, ts.cpu, t.tid, ts.state, ts.io_wait, w.tid as waker_tid from thread_state ts join thread t using(utid) left join thread w on w.utid = ts.waker_utid order by ts.ts, t.tid, ts.state;
select t.utid, t.tid, t.name, t.start_ts, t.end_ts, p.pid, t.is_main_thread from thread t left join process p using(upid) order by t.utid;
select p.upid, p.pid, p.name, p.cmdline, p.start_ts, p.end_ts, pp.pid as ppid, p.uid from process p left join process pp on pp.upid = p.parent_upid order by p.upid;
