-- counter, whole table: per track, how many values, their sum and extremes.
select t.name, t.type, ct.cpu, count(*) as n, sum(c.value) as sum_value,
       min(c.value) as min_value, max(c.value) as max_value,
       min(c.ts) as first_ts, max(c.ts) as last_ts
from counter c
join track t on t.id = c.track_id
left join cpu_counter_track ct on ct.id = c.track_id
group by t.name, t.type, ct.cpu
order by t.name, t.type, ct.cpu;
