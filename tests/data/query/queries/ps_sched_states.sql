-- sched.states: every state the trace holds and every named one (plus an ETW
-- state, a combination and NULL), with io_wait NULL, 0 and 1.
INCLUDE PERFETTO MODULE sched.states;
SELECT s.short_name, io.io_wait,
  sched_state_to_human_readable_string(s.short_name) AS name,
  sched_state_io_to_human_readable_string(s.short_name, io.io_wait) AS io_name
FROM (
  SELECT end_state AS short_name FROM sched
  UNION SELECT state FROM thread_state
  UNION SELECT column1 FROM (VALUES ('Running'), ('R'), ('R+'), ('S'), ('D'), ('T'), ('t'), ('X'), ('Z'),
    ('x'), ('I'), ('K'), ('W'), ('P'), ('N'), ('Stand By'), ('Waiting'), ('DK'), ('?'), (NULL))
) AS s
CROSS JOIN (SELECT NULL AS io_wait UNION ALL SELECT 0 UNION ALL SELECT 1) AS io
ORDER BY s.short_name, io.io_wait;
