-- ftrace_event with its args, whole table: per event name, CPU and arg key,
-- how many values of each type, their sums and extremes.
select e.name, e.cpu, a.key, a.flat_key, a.value_type, count(*) as n,
       count(distinct e.ts) as events, sum(a.int_value) as sum_int,
       min(a.int_value) as min_int, max(a.int_value) as max_int,
       count(distinct a.string_value) as distinct_strings,
       min(a.string_value) as min_string, max(a.string_value) as max_string
from ftrace_event e
left join args a on a.arg_set_id = e.arg_set_id
group by e.name, e.cpu, a.key, a.flat_key, a.value_type
order by e.name, e.cpu, a.key, a.flat_key, a.value_type;
