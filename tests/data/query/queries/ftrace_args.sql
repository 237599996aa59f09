-- ftrace_event with its args: the first 400 argument rows of the trace, the
-- thread by tid.
select e.ts, e.name, e.cpu, t.tid, a.flat_key, a.key, a.int_value, a.string_value,
       a.real_value, a.value_type
from ftrace_event e
left join thread t using (utid)
left join args a on a.arg_set_id = e.arg_set_id
order by e.ts, e.cpu, e.name, t.tid, a.key, a.flat_key, a.int_value, a.string_value,
         a.real_value, a.value_type
limit 400;
