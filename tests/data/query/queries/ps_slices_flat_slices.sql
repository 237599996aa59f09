-- slices.flat_slices: every thread slice's pieces of self time, by root and
-- time (empty pieces at a root's edges included, as upstream gives them).
include perfetto module slices.flat_slices;
select slice_id, ts, dur, depth, name, root_id, track_id, utid, tid, thread_name, upid, pid, process_name
from _slice_flattened
order by root_id, ts, dur, slice_id
limit 400;
