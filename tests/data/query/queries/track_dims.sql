-- tracks by type and name with their dimension args (utid, upid, name, cpu,
-- track_compressor_idx) and group.
select t.type, t.name, a.key, a.int_value, a.string_value, t.track_group_id is not null as grouped
from track t
left join args a on a.arg_set_id = t.dimension_arg_set_id
order by t.type, t.name, a.key, a.int_value, a.string_value;
