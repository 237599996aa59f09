-- linux_irqs, linux_hard_irqs and linux_soft_irqs: counts and sums per name, and that the union is both.
INCLUDE PERFETTO MODULE linux.irqs;
SELECT is_soft_irq, name, count(*) AS n, sum(dur) AS dur, min(ts) AS first_ts, count(parent_id) AS with_parent,
  sum(id) AS ids
FROM linux_irqs GROUP BY is_soft_irq, name
UNION ALL
SELECT 2, 'hard', count(*), sum(dur), min(ts), count(parent_id), sum(id) FROM linux_hard_irqs
UNION ALL
SELECT 3, 'soft', count(*), sum(dur), min(ts), NULL, sum(id) FROM linux_soft_irqs
ORDER BY 1, 2;
