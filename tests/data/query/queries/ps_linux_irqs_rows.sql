-- linux_irqs row by row: the first 100, all columns.
INCLUDE PERFETTO MODULE linux.irqs;
SELECT * FROM linux_irqs ORDER BY ts, id LIMIT 100;
