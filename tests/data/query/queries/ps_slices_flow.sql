-- slices.flow: every slice each flow-starting slice leads to.
include perfetto module slices.flow;
select root_node_id, node_id, parent_node_id
from _slice_following_flow!((select id from slice))
order by 1, 2;
