-- cpu_track (slice tracks of one CPU: IRQs, softirqs).
SELECT * FROM cpu_track ORDER BY id;
