-- thread: every thread, with the pid of its process.
select t.tid, t.name, t.start_ts, t.end_ts, p.pid, t.is_main_thread
from thread t left join process p using (upid)
order by t.tid, t.start_ts, t.end_ts, t.name, p.pid, t.is_main_thread;
