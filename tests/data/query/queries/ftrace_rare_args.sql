-- ftrace_event with its args: every event other than the frequent
-- sched_switch, sched_waking and cpu_idle (process lifetime, print, irq, ...).
select e.ts, e.name, e.cpu, t.tid, a.flat_key, a.key, a.int_value, a.string_value,
       a.real_value, a.value_type
from ftrace_event e
left join thread t using (utid)
left join args a on a.arg_set_id = e.arg_set_id
where e.name not in ('sched_switch', 'sched_waking', 'cpu_idle')
order by e.ts, e.cpu, e.name, t.tid, a.key, a.flat_key, a.int_value, a.string_value,
         a.real_value, a.value_type;
