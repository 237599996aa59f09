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
// instant at the same point. They are macros written in C++: each expands
// to a join SQLite plans like any other (the partitions' equality first).
#ifndef SLUICE_USER_QUERY_ENGINE_OPERATORS_INTERVAL_INTERSECT_H_
#define SLUICE_USER_QUERY_ENGINE_OPERATORS_INTERVAL_INTERSECT_H_

#include <vector>

#include "user/query/engine/perfetto_sql/macro_expander.h"

namespace sluice {

std::vector<PerfettoSqlMacro> IntervalIntersectMacros();

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_OPERATORS_INTERVAL_INTERSECT_H_
