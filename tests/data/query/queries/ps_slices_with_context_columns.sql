-- The columns, in order, of process_slice and thread_or_process_slice (rows
-- without args only: arg set ids are numbered differently upstream).
INCLUDE PERFETTO MODULE slices.with_context;
SELECT p.*, '|' AS sep, tp.*
FROM process_slice AS p JOIN thread_or_process_slice AS tp USING (id)
WHERE p.arg_set_id IS NULL
ORDER BY p.id;
