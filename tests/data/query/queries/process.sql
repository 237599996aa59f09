-- process: every process, with the pid of its parent.
select p.pid, p.name, p.cmdline, p.start_ts, p.end_ts, pp.pid as parent_pid, p.uid
from process p left join process pp on pp.upid = p.parent_upid
order by p.pid, p.start_ts, p.end_ts, p.name, p.cmdline, parent_pid, p.uid;
