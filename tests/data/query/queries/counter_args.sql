-- counter values with args (dma_heap_change's inode, atrace counters' utid),
-- by track name and time.
select t.name, c.ts, c.value, a.key, a.int_value, a.string_value
from counter c
join track t on t.id = c.track_id
join args a on a.arg_set_id = c.arg_set_id
order by t.name, c.ts, a.key;
