-- The `slices` view (an alias of slice): its columns, and its rows without
-- args (arg set ids are numbered differently: ps_prelude_slices_args has the
-- others, by content).
SELECT * FROM slices WHERE arg_set_id IS NULL ORDER BY id LIMIT 150;
