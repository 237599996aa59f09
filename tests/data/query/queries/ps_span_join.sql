-- SPAN_JOIN, SPAN_LEFT_JOIN and SPAN_OUTER_JOIN: partitioned on both sides,
-- on one side only and on neither, with instants, over small tables written
-- here; then the sched slices of each CPU joined with its cpuidle states.
-- (Spans that overlap within one partition of one table are an error in
-- sluice and wrong rows upstream: not compared here; see
-- tests/user/query/engine/operators/span_join_test.cc, which also has the
-- one instant case where upstream's answer is wrong: an instant of t2 at the
-- very end of a t1 span in SPAN_OUTER_JOIN.)
CREATE PERFETTO TABLE _sj_a AS
SELECT 0 AS ts, 10 AS dur, 0 AS cpu, 'a0' AS a_name UNION ALL
SELECT 15, 5, 0, 'a1' UNION ALL
SELECT 30, 0, 0, 'a_instant' UNION ALL
SELECT 40, 10, 0, 'a_at_b_end' UNION ALL
SELECT 0, 100, 1, 'a_cpu1' UNION ALL
SELECT 5, 5, 2, 'a_cpu2_only';
CREATE PERFETTO TABLE _sj_b AS
SELECT 5 AS ts, 13 AS dur, 0 AS cpu, 'b0' AS b_name UNION ALL
SELECT 25, 15, 0, 'b1' UNION ALL
SELECT 55, 0, 0, 'b_instant_alone' UNION ALL
SELECT 20, 10, 1, 'b_cpu1' UNION ALL
SELECT 60, 0, 1, 'b_cpu1_instant' UNION ALL
SELECT 7, 3, 3, 'b_cpu3_only';
CREATE PERFETTO TABLE _sj_u AS
SELECT 8 AS ts, 30 AS dur, 'u0' AS u_name UNION ALL
SELECT 60, 5, 'u1';
CREATE VIRTUAL TABLE _sj_inner USING SPAN_JOIN(_sj_a PARTITIONED cpu, _sj_b PARTITIONED cpu);
CREATE VIRTUAL TABLE _sj_left USING SPAN_LEFT_JOIN(_sj_a PARTITIONED cpu, _sj_b PARTITIONED cpu);
CREATE VIRTUAL TABLE _sj_outer USING SPAN_OUTER_JOIN(_sj_a PARTITIONED cpu, _sj_b PARTITIONED cpu);
CREATE VIRTUAL TABLE _sj_mixed USING SPAN_JOIN(_sj_a PARTITIONED cpu, _sj_u);
CREATE VIRTUAL TABLE _sj_mixed_left USING SPAN_LEFT_JOIN(_sj_u, _sj_a PARTITIONED cpu);
-- Unpartitioned, the spans of one table must not overlap: cpu 0's only.
CREATE PERFETTO VIEW _sj_b0 AS SELECT ts, dur, b_name FROM _sj_b WHERE cpu = 0;
CREATE VIRTUAL TABLE _sj_plain USING SPAN_OUTER_JOIN(_sj_u, _sj_b0);
CREATE PERFETTO VIEW _sj_sched AS SELECT ts, dur, cpu, utid FROM sched WHERE dur > 0;
CREATE PERFETTO VIEW _sj_idle AS
SELECT c.ts, lead(c.ts, 1, trace_end()) OVER (PARTITION BY c.track_id ORDER BY c.ts) - c.ts AS dur,
  t.cpu, CAST(c.value AS INT) AS idle
FROM counter c JOIN cpu_counter_track t ON c.track_id = t.id WHERE t.name = 'cpuidle';
CREATE VIRTUAL TABLE _sj_sched_idle USING SPAN_LEFT_JOIN(_sj_sched PARTITIONED cpu, _sj_idle PARTITIONED cpu);
SELECT 'inner' AS j, ts, dur, cpu, a_name, b_name, NULL AS u_name FROM _sj_inner
UNION ALL SELECT 'left', ts, dur, cpu, a_name, b_name, NULL FROM _sj_left
UNION ALL SELECT 'outer', ts, dur, cpu, a_name, b_name, NULL FROM _sj_outer
UNION ALL SELECT 'mixed', ts, dur, cpu, a_name, NULL, u_name FROM _sj_mixed
UNION ALL SELECT 'mixed_left', ts, dur, cpu, a_name, NULL, u_name FROM _sj_mixed_left
UNION ALL SELECT 'plain', ts, dur, NULL, NULL, b_name, u_name FROM _sj_plain
UNION ALL SELECT 'sched_idle', count(*), sum(dur), count(DISTINCT cpu), sum(idle IS NULL), sum(idle), NULL
  FROM _sj_sched_idle
ORDER BY j, cpu, ts, dur, a_name, b_name, u_name;
