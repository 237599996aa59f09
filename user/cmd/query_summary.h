// `sluice query TRACE --summary`: a trace summary (Perfetto's metrics v2,
// user/query/summary/trace_summary.h) from spec files, printed as
// trace_processor_shell --summary prints it. The spec files are read and
// parsed before the trace is imported, so a typo fails fast.
#ifndef SLUICE_USER_CMD_QUERY_SUMMARY_H_
#define SLUICE_USER_CMD_QUERY_SUMMARY_H_

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "perfetto/trace_summary/file.pb.h"
#include "shm/base/status.h"

namespace sluice {

class QueryEngine;

struct QuerySummaryOptions {
  std::vector<std::string> spec_paths;  // --summary-spec, in order.
  // --summary-metrics-v2: comma-separated ids, or "all"; none computed
  // without it, as upstream.
  std::optional<std::string> metric_ids;
  std::string metadata_query_id;  // --summary-metadata-query
  bool binary = false;            // --summary-format binary
};

// The specs of `paths`: binary TraceSummarySpec for a name ending in .pb,
// text format otherwise. Errors name the file ("spec.textproto: line 3
// column 7: ...").
StatusOr<std::vector<perfetto::protos::TraceSummarySpec>> ReadTraceSummarySpecs(
    const std::vector<std::string>& paths);

// Computes the summary and writes it to `out` (text without a final
// newline, as upstream, or the binary proto).
Status WriteTraceSummary(QueryEngine& engine, const std::vector<perfetto::protos::TraceSummarySpec>& specs,
                         const QuerySummaryOptions& options, FILE* out);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_QUERY_SUMMARY_H_
