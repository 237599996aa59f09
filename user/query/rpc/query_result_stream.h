// The reply to trace_processor's /query, as Perfetto's Python API and UI read
// it: QueryResult messages (protos/perfetto/trace_processor/
// trace_processor.proto) sent one after another. The first carries the
// column names; rows follow in CellsBatches cut at row boundaries; the last
// batch is flagged is_last_batch and its message carries the error, if any,
// and the statement counts. Rows go out as they are stepped, so a result of
// any size costs one batch of memory.
#ifndef SLUICE_USER_QUERY_RPC_QUERY_RESULT_STREAM_H_
#define SLUICE_USER_QUERY_RPC_QUERY_RESULT_STREAM_H_

#include <cstddef>
#include <functional>
#include <string_view>

struct sqlite3;

namespace sluice {

class SqlDialect;

// Takes one serialized QueryResult message; returns false when the peer is
// gone, which stops the query.
using QueryResultSink = std::function<bool(std::string_view message)>;

// Batches end at the first row boundary past either limit: upstream's sizes,
// small enough for a browser to decode a batch at a time.
struct QueryResultBatchLimits {
  size_t max_cells = 50000;
  size_t max_bytes = 128 * 1024;
};

// Runs the PerfettoSQL script `sql` on `db` (statements before the last run
// to the end, their rows dropped, as trace_processor does) and streams the
// last statement's rows into `sink`. Always ends with a last batch, also
// when a statement fails (error set) or the script is empty.
void StreamQueryResult(sqlite3* db, SqlDialect* dialect, std::string_view sql, const QueryResultSink& sink,
                       const QueryResultBatchLimits& limits = {});

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_RPC_QUERY_RESULT_STREAM_H_
