-- Idle statistics per CPU: cpu_idle_stats has, for each CPU and idle state it
-- entered, how often, for how long in total and on average, and the share of
-- the CPU's counted time spent there.
--
-- state is the cpuidle index plus one (C-states counted from 1; the running
-- intervals, idle -1, get no row). idle_percent divides by all of the CPU's
-- cpu_idle_counters time, running intervals included. avg_dur is an integer
-- division, as upstream's.

INCLUDE PERFETTO MODULE linux.cpu.idle;

CREATE PERFETTO TABLE cpu_idle_stats(
  cpu LONG,
  state LONG,
  count LONG,
  dur DURATION,
  avg_dur DURATION,
  idle_percent DOUBLE
) AS
WITH
  per_state AS (
    SELECT cpu, idle + 1 AS state, count(idle) AS count, sum(dur) AS dur, sum(dur) / count(idle) AS avg_dur
    FROM cpu_idle_counters
    WHERE idle >= 0
    GROUP BY cpu, idle
  ),
  per_cpu AS (SELECT cpu, sum(dur) AS dur FROM cpu_idle_counters GROUP BY cpu)
SELECT s.cpu, s.state, s.count, s.dur, s.avg_dur, s.dur * 100.0 / c.dur AS idle_percent
FROM per_state AS s
JOIN per_cpu AS c USING (cpu);
