-- atrace counters (C|pid|name|value): per process counter track, with the
-- writer's utid arg.
select c.ts, c.value, t.name, t.type, t.upid, a.key, a.int_value
from counter c
join process_counter_track t on t.id = c.track_id
left join args a on a.arg_set_id = c.arg_set_id
order by c.ts, t.name, c.id;
