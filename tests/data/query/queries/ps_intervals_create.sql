-- intervals.create_intervals' _interval_create!: literal starts and ends
-- (repeats, an end at a start's own time, a start with no end after it),
-- and the trace's sched slices' starts against their ends.
include perfetto module intervals.create_intervals;
select 'literal' as kind, ts, dur
from _interval_create!(
  (select 1 as ts union all select 1 union all select 3 union all select 5 union all select 9),
  (select 3 as ts union all select 3 union all select 8))
union all
select 'sched', ts, dur
from _interval_create!((select ts from sched where dur > 0), (select ts + dur as ts from sched where dur > 0))
order by 1, 2, 3
limit 300;
