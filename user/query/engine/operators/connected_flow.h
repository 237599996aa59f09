// The flow operators upstream offers without an INCLUDE, as table-valued
// functions over `flow`: directly_connected_flow(slice_id),
// following_flow(slice_id) and preceding_flow(slice_id). Each gives flow
// rows (id, slice_out, slice_in, trace_id, arg_set_id) as upstream's do:
//
//   A breadth-first search from the slice. Each slice is entered once; on
//   entering, the search lists the flows that leave it (following,
//   connected) or end in it (preceding, connected), queueing the slice at
//   each flow's other end, and (following) its descendants or (preceding)
//   its ancestors, root first. A slice entered along a flow does not turn
//   back along the other direction (connected), and one entered as a
//   relative does not look for relatives again. Rows come in the order the
//   search lists them, a flow listed from both of its ends twice, and `id`
//   is the row's position in the result, not the flow's id (upstream's
//   numbering: the flow's own id is not among the columns).
//
// An argument that is NULL gives no rows; one that is not an integer, or no
// slice's id, is an error naming it, as upstream.
//
// Why C++: the search's order and its repeated rows are what upstream
// returns, and a recursive SQL closure gives neither.
#ifndef SLUICE_USER_QUERY_ENGINE_OPERATORS_CONNECTED_FLOW_H_
#define SLUICE_USER_QUERY_ENGINE_OPERATORS_CONNECTED_FLOW_H_

#include "shm/base/status.h"

struct sqlite3;

namespace sluice {

struct TraceStorage;

// Registers the three table-valued functions in `db`; `storage` must
// outlive it.
Status RegisterConnectedFlow(sqlite3* db, const TraceStorage* storage);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_OPERATORS_CONNECTED_FLOW_H_
