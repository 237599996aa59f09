-- counter on its track (cpu_idle, cpu_frequency, ...): the first 300 values.
select c.ts, t.name, t.type, ct.cpu, c.value
from counter c
join track t on t.id = c.track_id
left join cpu_counter_track ct on ct.id = c.track_id
order by c.ts, t.name, t.type, ct.cpu, c.value
limit 300;
