// __intrinsic_slice_descendants(slice_id): the ids of the slices nested in
// slice_id, without it, ascending. The prelude's descendant_slice(id)
// (stdlib/prelude/slices.sql) joins them to `slice` for its columns.
//
// As upstream, nesting is a time test rather than a walk down the tree: a
// slice on the same track, deeper, that starts inside [ts, ts + dur] (to the
// end of time when dur is -1) is a descendant, since the slices of a track
// nest. Only a candidate starting exactly at either end may belong to
// another subtree (a sibling's child starting where this slice ends, or an
// earlier sibling's instant child at this slice's start), so that one must
// have slice_id among its ancestors (its parent_id chain).
//
// Why C++: in SQL each call scanned the slice's whole track (every slice
// before it too), so a query calling it per slice took minutes on a track of
// 19,000 slices. Here each track's slices are sorted by ts once per
// connection (on the first call) and a call binary-searches its start: its
// cost is the slices in its time range. An argument that is not an integer,
// or no slice's id, gives no rows, as the SQL did.
#ifndef SLUICE_USER_QUERY_ENGINE_OPERATORS_SLICE_DESCENDANTS_H_
#define SLUICE_USER_QUERY_ENGINE_OPERATORS_SLICE_DESCENDANTS_H_

#include "shm/base/status.h"

struct sqlite3;

namespace sluice {

struct TraceStorage;

// Registers the table-valued function in `db`; `storage` must outlive it.
Status RegisterSliceDescendants(sqlite3* db, const TraceStorage* storage);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_OPERATORS_SLICE_DESCENDANTS_H_
