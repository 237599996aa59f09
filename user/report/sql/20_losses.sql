-- title: Losses and errors
-- Every stat whose severity is data_loss or error and whose value is not
-- zero: where data was lost (the stage), how much, and the fix. An empty
-- result means nothing was lost. `sluice stats TRACE` shows the same figures.
SELECT
  name,
  idx,
  severity,
  value,
  description AS fix
FROM stats
WHERE severity IN ('data_loss', 'error') AND value != 0
ORDER BY severity = 'error', name, idx;
