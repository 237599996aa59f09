-- Per-CPU tracks: counter tracks (cpu_counter_track: cpufreq, cpuidle) apart from slice tracks (cpu_track:
-- Irq Cpu N, SoftIrq Cpu N).
select 'counter' as kind, name, type, cpu from cpu_counter_track
union all
select 'slice', name, type, cpu from cpu_track
order by kind, cpu, type;
