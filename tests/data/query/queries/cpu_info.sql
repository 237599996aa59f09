-- cpu: what a CpuInfo packet says of each CPU (cluster, processor,
-- capacity, its features and ARM identifier as args), and each CPU's
-- frequencies.
select c.cpu, c.cluster_id, c.processor, c.capacity,
       extract_arg(c.arg_set_id, 'cpu_features.mte') as mte,
       extract_arg(c.arg_set_id, 'cpu_features.mte3') as mte3,
       extract_arg(c.arg_set_id, 'cpu_features.raw_bitmap') as raw_bitmap,
       extract_arg(c.arg_set_id, 'arm_cpu_implementer') as implementer,
       extract_arg(c.arg_set_id, 'arm_cpu_part') as part,
       (select group_concat(f.freq, ' ') from cpu_available_frequencies f where f.ucpu = c.ucpu) as freqs
from cpu c
order by c.cpu;
