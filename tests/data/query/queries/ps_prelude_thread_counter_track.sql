-- thread_counter_track: its columns (and rows, where a trace has any).
SELECT * FROM thread_counter_track ORDER BY id;
