// SPAN_JOIN, SPAN_LEFT_JOIN and SPAN_OUTER_JOIN: the Trace Processor's
// operators that join two tables of spans (ts, dur) on time, as SQLite
// virtual table modules:
//
//   CREATE VIRTUAL TABLE j USING SPAN_JOIN(t1 PARTITIONED cpu, t2 PARTITIONED cpu);
//
// A row of j is a stretch of time in which one row of t1 and one row of t2
// (of the same partition) both hold: ts, dur, the partition column, then
// t1's other columns, then t2's. SPAN_LEFT_JOIN also gives the stretches of
// t1 rows that no t2 row covers (t2's columns NULL); SPAN_OUTER_JOIN those
// of either side. Either table may be unpartitioned: it then joins every
// partition of the other. A table without dur has instants (dur 0); so
// does a row with dur -1 (open at the trace's end), as upstream treats it.
// Rows come out by partition, then ts.
//
//   t1 (cpu 0):  [0 ───── 10)      [15 ── 20)
//   t2 (cpu 0):       [5 ─────────────── 18)
//   SPAN_JOIN:        [5 ─ 10)     [15 ─ 18)
//   LEFT:        [0 ─ 5)[5 ─ 10)   [15 ─ 18)[18 ─ 20)
//
// How: each table is read through one SQLite statement sorted by
// (partition, ts), and the two are swept together, one row of each at a
// time: memory does not grow with the tables, and a column of the output
// is read straight from the statement's current row.
//
// Better than the reference: upstream requires that spans of one table do
// not overlap within a partition, does not check it, and returns wrong rows
// when they do. sluice checks and fails the query naming the table, the
// partition and the timestamp.
#ifndef SLUICE_USER_QUERY_ENGINE_OPERATORS_SPAN_JOIN_H_
#define SLUICE_USER_QUERY_ENGINE_OPERATORS_SPAN_JOIN_H_

#include "shm/base/status.h"

struct sqlite3;

namespace sluice {

// Registers the three modules (span_join, span_left_join, span_outer_join)
// on `db`.
Status RegisterSpanJoin(sqlite3* db);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_OPERATORS_SPAN_JOIN_H_
