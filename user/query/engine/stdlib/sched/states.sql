-- Human-readable names for the one-letter scheduling states of sched.end_state
-- and thread_state.state ('S' is 'Sleeping'). Anything without a name (a
-- combination such as 'DK', an ETW state, a typo) comes back unchanged.

CREATE PERFETTO FUNCTION sched_state_to_human_readable_string(short_name STRING) RETURNS STRING
AS
SELECT CASE $short_name
  WHEN 'Running' THEN 'Running'
  WHEN 'R' THEN 'Runnable'
  WHEN 'R+' THEN 'Runnable (Preempted)'
  WHEN 'S' THEN 'Sleeping'
  WHEN 'D' THEN 'Uninterruptible Sleep'
  WHEN 'T' THEN 'Stopped'
  WHEN 't' THEN 'Traced'
  WHEN 'X' THEN 'Exit (Dead)'
  WHEN 'Z' THEN 'Exit (Zombie)'
  WHEN 'x' THEN 'Task Dead'
  WHEN 'I' THEN 'Idle'
  WHEN 'K' THEN 'Wakekill'
  WHEN 'W' THEN 'Waking'
  WHEN 'P' THEN 'Parked'
  WHEN 'N' THEN 'No Load'
  -- Windows (ETW) states already are words ('Stand By', 'Waiting', ...): the
  -- ELSE passes them through like any unknown state.
  ELSE $short_name
END;

-- The state's name with ' (IO)' or ' (non-IO)' after it when io_wait says
-- which (io_wait NULL: no suffix). printf turns a NULL state into ''.
CREATE PERFETTO FUNCTION sched_state_io_to_human_readable_string(sched_state STRING, io_wait BOOL)
RETURNS STRING
AS
SELECT printf('%s%s', sched_state_to_human_readable_string($sched_state),
  CASE $io_wait WHEN 1 THEN ' (IO)' WHEN 0 THEN ' (non-IO)' ELSE '' END);
