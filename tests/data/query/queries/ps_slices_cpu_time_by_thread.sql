-- thread_slice_cpu_time summed per thread, against the slices' own time.
INCLUDE PERFETTO MODULE slices.cpu_time;
SELECT c.utid, c.thread_name, c.upid, c.process_name, count(*) AS slices, sum(c.cpu_time) AS cpu_time,
  sum(s.dur) AS slice_dur, max(c.cpu_time) AS longest
FROM thread_slice_cpu_time AS c JOIN slice AS s USING (id)
GROUP BY c.utid
ORDER BY c.utid;
