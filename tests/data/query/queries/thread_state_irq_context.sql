-- thread_state.irq_context: by state, how many rows a wakeup from an
-- interrupt (1), from a task (0) or nothing known (NULL) made; and the
-- first 40 rows that have it.
SELECT 'count' AS what, state, irq_context, count(*) AS n, NULL AS ts, NULL AS utid
FROM thread_state GROUP BY state, irq_context
UNION ALL
SELECT * FROM (
  SELECT 'row', state, irq_context, NULL, ts, utid FROM thread_state
  WHERE irq_context IS NOT NULL ORDER BY ts, utid LIMIT 40)
ORDER BY 1, 2, 3, 5, 6;
