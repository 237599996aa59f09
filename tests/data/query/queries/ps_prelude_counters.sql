-- The `counters` view: counter values with their track's name and unit;
-- its columns (rows without args), the first 150.
SELECT * FROM counters WHERE arg_set_id IS NULL ORDER BY id LIMIT 150;
