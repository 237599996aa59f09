-- The flow operators from every slice: following_flow, preceding_flow and
-- directly_connected_flow, each flow row by the slice it starts from.
select 'following' as op, s.id as start, f.id, f.slice_out, f.slice_in, f.trace_id
from slice s join following_flow(s.id) f
union all
select 'preceding', s.id, f.id, f.slice_out, f.slice_in, f.trace_id
from slice s join preceding_flow(s.id) f
union all
select 'connected', s.id, f.id, f.slice_out, f.slice_in, f.trace_id
from slice s join directly_connected_flow(s.id) f
order by 1, 2, 3;
