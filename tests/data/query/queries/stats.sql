-- stats: every non-zero figure the trace itself carries.
select name, idx, severity, source, value from stats
where source = 'trace' and value != 0
order by name, idx;
