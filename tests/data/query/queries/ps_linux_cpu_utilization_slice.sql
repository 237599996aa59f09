-- linux.cpu.utilization.slice and slices.cpu_time's thread_slice_cpu_cycles:
-- the cycles of every thread slice, over the whole trace and cut to its
-- middle half.
include perfetto module slices.cpu_time;
select 'all' as part, id, name, utid, thread_name, upid, process_name, millicycles, megacycles
from thread_slice_cpu_cycles
union all
select 'middle', id, name, utid, thread_name, upid, process_name, millicycles, megacycles
from cpu_cycles_per_thread_slice_in_interval(trace_start() + trace_dur() / 4, trace_dur() / 2)
order by 1, 2
limit 300;
