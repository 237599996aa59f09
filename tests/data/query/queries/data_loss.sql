-- Perfetto's data-loss query (docs/concepts/buffers.md, "Debugging data
-- losses"), ordered.
select name, idx, severity, source, value from stats
where severity = 'data_loss' and value != 0
order by name, idx;
