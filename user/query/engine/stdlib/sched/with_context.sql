-- The sched table with names: sched_with_thread_process is every sched slice
-- (swapper's and unfinished ones too) with its thread's and process's ids and
-- names.
--
-- Columns come in upstream's order (id, ts, dur, utid, upid, thread_name,
-- process_name, cpu, end_state, priority), which is not the order its
-- declaration lists them in. A thread without a process has upid and
-- process_name NULL.

CREATE PERFETTO VIEW sched_with_thread_process(
  id ID(sched.id),
  ts TIMESTAMP,
  dur DURATION,
  utid JOINID(thread.id),
  upid JOINID(process.id),
  thread_name STRING,
  process_name STRING,
  cpu LONG,
  end_state STRING,
  priority LONG
)
AS
SELECT
  s.id,
  s.ts,
  s.dur,
  s.utid,
  t.upid,
  t.name AS thread_name,
  p.name AS process_name,
  s.cpu,
  s.end_state,
  s.priority
FROM sched AS s
JOIN thread AS t USING (utid)
LEFT JOIN process AS p USING (upid);
