-- The interval functions of linux.cpu.utilization (system, thread, process)
-- over the middle half of the trace: cycles, runtime and the awake
-- (monotonic) time and shares, which need the trace's clock snapshots.
include perfetto module linux.cpu.utilization.system;
include perfetto module linux.cpu.utilization.thread;
include perfetto module linux.cpu.utilization.process;
select 'system' as kind, NULL as id, millicycles, megacycles, runtime, awake_runtime, min_freq, max_freq, avg_freq
from cpu_cycles_in_interval(trace_start() + trace_dur() / 4, trace_dur() / 2)
union all
select 'thread', utid, millicycles, megacycles, runtime, awake_runtime, min_freq, max_freq, avg_freq
from cpu_cycles_per_thread_in_interval(trace_start() + trace_dur() / 4, trace_dur() / 2)
union all
select 'process', upid, millicycles, megacycles, runtime, awake_runtime, min_freq, max_freq, avg_freq
from cpu_cycles_per_process_in_interval(trace_start() + trace_dur() / 4, trace_dur() / 2)
union all
select 'system_share', NULL, awake_dur, awake_utilization, awake_unnormalized_utilization, NULL, NULL, NULL, NULL
from cpu_utilization_in_interval(trace_start() + trace_dur() / 4, trace_dur() / 2)
union all
select 'thread_share', utid, awake_dur, awake_utilization, awake_unnormalized_utilization, upid, NULL, NULL, NULL
from cpu_thread_utilization_in_interval(trace_start() + trace_dur() / 4, trace_dur() / 2)
union all
select 'process_share', upid, awake_dur, awake_utilization, awake_unnormalized_utilization, NULL, NULL, NULL, NULL
from cpu_process_utilization_in_interval(trace_start() + trace_dur() / 4, trace_dur() / 2)
order by 1, 2;
