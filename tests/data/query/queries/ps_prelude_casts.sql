-- The cast_int!, cast_double! and cast_string! macros, on constants and on
-- the trace's own numbers.
SELECT
  cast_int!('12abc') AS i_text, cast_int!(3.9) AS i_real, cast_int!(NULL) AS i_null,
  cast_double!(7) AS d_int, cast_double!('2.5x') AS d_text,
  cast_string!(42) AS s_int, cast_string!(1.5) AS s_real, typeof(cast_string!(1)) AS s_type,
  cast_string!((SELECT count(*) FROM sched)) AS s_sched,
  cast_int!((SELECT count(*) FROM thread) / 3.0) AS i_threads;
