-- process counter tracks (process_stats memory, oom_score_adj, smaps, runtimes): per track, its process,
-- dimension and values.
select t.name, t.type, p.pid, p.name as process_name,
       extract_arg(tr.dimension_arg_set_id, 'process_memory_key') as memory_key,
       extract_arg(tr.dimension_arg_set_id, 'smaps_key') as smaps_key,
       extract_arg(tr.dimension_arg_set_id, 'proc_stat_runtime_key') as runtime_key,
       count(*) as n, sum(c.value) as sum_value, min(c.value) as min_value, max(c.value) as max_value,
       min(c.ts) as first_ts, max(c.ts) as last_ts
from counter c
join process_counter_track t on t.id = c.track_id
join track tr on tr.id = t.id
join process p using (upid)
group by t.id
order by p.pid, t.upid, t.name;
