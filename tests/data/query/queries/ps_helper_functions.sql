-- EXTRACT_ARG, STR_SPLIT, HASH and REGEXP over the trace's ftrace events.
SELECT name,
  count(*) AS n,
  sum(extract_arg(arg_set_id, 'prev_pid')) AS prev_pids,
  sum(length(extract_arg(arg_set_id, 'next_comm'))) AS next_comm_chars,
  sum(name REGEXP '^sched_') AS sched_named,
  str_split(name, '_', 1) AS second_word,
  hash(name, count(*)) AS h
FROM ftrace_event GROUP BY name ORDER BY name;
