// The QueryTables over a TraceStorage: Perfetto's trace processor tables, by
// name and column, read in place (see query_table.h for how SQLite uses
// them). Columns Perfetto has that a sluice trace cannot fill (machine_id,
// android_appid, ...) are left out, or NULL where Perfetto's own queries
// commonly name them; docs/QUERY.md lists each table's columns.
#ifndef SLUICE_USER_QUERY_ENGINE_QUERY_TABLES_H_
#define SLUICE_USER_QUERY_ENGINE_QUERY_TABLES_H_

#include <memory>
#include <vector>

#include "user/query/engine/query_table.h"
#include "user/query/storage/trace_storage.h"

namespace sluice {

// Tables named as Perfetto names them, plus "__sluice_track" (all tracks,
// with a cpu column), under the views `track` and `cpu_counter_track` that
// QueryEngine defines.
std::vector<std::unique_ptr<QueryTable>> MakeQueryTables(const TraceStorage* storage);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_QUERY_TABLES_H_
