// The interval-intersect operator, as the macros upstream's docs use after
// `INCLUDE PERFETTO MODULE intervals.intersect`:
//
//   _interval_intersect!((t0, t1, ...), (p1, ...))
//       every combination of one row from each table (2 to 15 tables, each
//       with id, ts, dur and the partition columns) whose intervals share
//       some time, within the same partition (NULL matches NULL): columns
//       ts, dur (the shared time), id_0 ... id_N-1, then the partition
//       columns. `()` for no partition.
//   _interval_intersect_single!(ts, dur, t)
//       the rows of t (id, ts, dur) that share time with [ts, ts + dur),
//       clipped to it: columns id, ts, dur.
//
// Intervals that only touch share nothing; an instant (dur 0) shares its
// point with an interval that holds it ([a, b) holds a, not b) and with an
// instant at the same point. They are macros written in C++.
// _interval_intersect! expands to a call of a table-valued function
// (__intrinsic_interval_intersect_N_M, defined on the first use of that
// shape) that reads each table sorted by ts, groups it by partition and
// sweeps the tables together, folding one table in at a time: its cost
// grows with the rows and the pairs found, not with their product, as a
// plain join on the partition would (thread_state x sched took over a
// minute on a 1 MB trace that way). An interval with a negative dur is an
// error, as upstream makes it. _interval_intersect_single! expands to a
// filter on its one table.
#ifndef SLUICE_USER_QUERY_ENGINE_OPERATORS_INTERVAL_INTERSECT_H_
#define SLUICE_USER_QUERY_ENGINE_OPERATORS_INTERVAL_INTERSECT_H_

#include <vector>

struct sqlite3;

#include "user/query/engine/perfetto_sql/macro_expander.h"

namespace sluice {

// The macros; `db` is where the multi-table one defines its functions.
std::vector<PerfettoSqlMacro> IntervalIntersectMacros(sqlite3* db);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_OPERATORS_INTERVAL_INTERSECT_H_
