-- thread_slice: thread slices with their thread and process (thread slices
-- have no args), the first 150.
INCLUDE PERFETTO MODULE slices.with_context;
SELECT * FROM thread_slice ORDER BY id LIMIT 150;
