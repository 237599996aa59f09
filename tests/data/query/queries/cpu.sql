-- cpu: the CPUs the trace saw.
select cpu from cpu order by cpu;
