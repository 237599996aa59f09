-- Kernel threads: linux_kernel_threads lists every thread of kthreadd (pid 2)
-- and of the processes kthreadd started, with their process's and their own
-- ids and names.
--
-- On Linux every kernel thread is a child of kthreadd, so "pid 2 or parent
-- is pid 2" is the whole set; each kernel thread is its own process, hence a
-- row per (process, thread) pair.

CREATE PERFETTO TABLE linux_kernel_threads(
  upid JOINID(process.id),
  utid JOINID(thread.id),
  pid LONG,
  tid LONG,
  process_name STRING,
  thread_name STRING,
  machine_id JOINID(machine.id)
) AS
WITH
  kthreadd AS (SELECT upid, pid, name, machine_id FROM process WHERE pid = 2),
  kernel_processes AS (
    SELECT upid, pid, name, machine_id FROM kthreadd
    UNION
    SELECT child.upid, child.pid, child.name, child.machine_id
    FROM process AS child
    JOIN kthreadd ON child.parent_upid = kthreadd.upid
  )
SELECT p.upid, t.utid, p.pid, t.tid, p.name AS process_name, t.name AS thread_name, p.machine_id
FROM kernel_processes AS p
JOIN thread AS t USING (upid);
