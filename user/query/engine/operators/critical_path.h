// The critical-path walk of sched.thread_executing_span, as upstream's
// __intrinsic_critical_path_walk does it, in three SQL functions:
//
//   __sluice_wakeup_graph(id, utid, ts, dur, idle_dur, waker_id, prev_id)
//       aggregate: the wakeup graph's nodes (thread executing spans) as a
//       BLOB;
//   __sluice_int_list(x)
//       aggregate: the root node ids as a BLOB;
//   __sluice_critical_path_walk(graph, roots)
//       table-valued: for each root, the frames (root_id, depth, ts, dur,
//       blocker_id, blocker_utid, parent_id) of who kept the root's thread
//       from running, and who ran.
//
// BLOBs rather than pointers carry the graph from the aggregates to the
// walk: a BLOB passes through the scalar subqueries the macros wrap them
// in, a pointer value does not survive being copied.
//
// The walk, per root (a depth-first stack of frames, each a node and a
// time window, starting with the root's idle time and run):
//   - the node's idle stretch [ts - idle_dur, ts) within the window: when
//     the node was woken by a thread, that waker's node takes it over one
//     level deeper; when it has no waker (woken from an interrupt) but a
//     previous span, the node itself is the blocker (it was in the kernel);
//   - the node's run [ts, ts + dur) within the window: the node is the
//     blocker at this depth;
//   - window time before the node's idle stretch goes to the thread's
//     previous span at the same depth.
// An unknown idle_dur leaves the idle stretch open down to the window's
// start. Frames carry the node one level up as parent_id.
#ifndef SLUICE_USER_QUERY_ENGINE_OPERATORS_CRITICAL_PATH_H_
#define SLUICE_USER_QUERY_ENGINE_OPERATORS_CRITICAL_PATH_H_

#include "shm/base/status.h"

struct sqlite3;

namespace sluice {

// Registers the three functions in `db`.
Status RegisterCriticalPath(sqlite3* db);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_OPERATORS_CRITICAL_PATH_H_
