-- linux.irqs' linux_interrupt_mapping: the IRQ names InterruptInfo gives
-- (/proc/interrupts at the start of the trace), first name per number.
include perfetto module linux.irqs;
select id, irq_id, name, machine_id
from linux_interrupt_mapping
order by id;
