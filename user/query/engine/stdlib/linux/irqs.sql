-- Interrupts as slices: linux_hard_irqs (irq_handler_entry/exit), linux_soft_irqs
-- (softirq_entry/exit) and linux_irqs, both together with an is_soft_irq flag;
-- linux_interrupt_mapping names the hardware IRQ numbers.
--
-- Hard IRQs sit on the per-CPU tracks of type cpu_irq, soft IRQs on those of
-- type cpu_softirq. A hard IRQ's parent_id is the slice of the IRQ it
-- interrupted; soft IRQs have none in linux_irqs.
--
-- Upstream's linux_interrupt_mapping (the IRQ number to name table its
-- importer keeps) is not here: sluice's importer does not record it yet.

CREATE PERFETTO VIEW linux_hard_irqs(
  ts TIMESTAMP,
  dur DURATION,
  name STRING,
  id JOINID(slice.id),
  parent_id JOINID(slice.id)
) AS
SELECT s.ts, s.dur, s.name, s.id, s.parent_id
FROM slice AS s
JOIN track AS t ON t.id = s.track_id
WHERE t.type = 'cpu_irq';

CREATE PERFETTO VIEW linux_soft_irqs(
  ts TIMESTAMP,
  dur DURATION,
  name STRING,
  id JOINID(slice.id)
) AS
SELECT s.ts, s.dur, s.name, s.id
FROM slice AS s
JOIN track AS t ON t.id = s.track_id
WHERE t.type = 'cpu_softirq';

CREATE PERFETTO VIEW linux_irqs(
  ts TIMESTAMP,
  dur DURATION,
  name STRING,
  id JOINID(slice.id),
  parent_id JOINID(slice.id),
  is_soft_irq BOOL
) AS
SELECT ts, dur, name, id, parent_id, 0 AS is_soft_irq FROM linux_hard_irqs
UNION ALL
SELECT ts, dur, name, id, NULL AS parent_id, 1 AS is_soft_irq FROM linux_soft_irqs;

-- The hardware IRQs' names (InterruptInfo, recorded by linux.system_info
-- with irq_names: /proc/interrupts at the start of the trace): what the
-- numbers of irq_handler_entry's IRQ slices are.
CREATE PERFETTO VIEW linux_interrupt_mapping(
  id LONG,
  irq_id LONG,
  name STRING,
  machine_id LONG
) AS
SELECT id, irq_id, name, machine_id FROM _linux_interrupt_mapping;
