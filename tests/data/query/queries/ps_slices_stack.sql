-- slices.stack: every slice's stack_id and parent_stack_id, and the
-- ancestors and descendants of the stacks of the first slices, by stack.
include perfetto module slices.stack;
select 'stack' as kind, id, stack_id, parent_stack_id, NULL as of_stack
from slice_with_stack_id
union all
select 'ancestor', a.id, NULL, NULL, s.stack_id
from (select distinct stack_id from slice_with_stack_id order by stack_id limit 8) s
join ancestor_slice_by_stack(s.stack_id) a
union all
select 'descendant', d.id, NULL, NULL, s.stack_id
from (select distinct stack_id from slice_with_stack_id order by stack_id limit 8) s
join descendant_slice_by_stack(s.stack_id) d
order by 1, 5, 2
limit 400;
