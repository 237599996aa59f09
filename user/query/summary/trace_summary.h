// Trace summaries (Perfetto's "metrics v2"): a TraceSummarySpec names
// metrics, each a structured query (structured_query_sql.h) with dimension
// columns and a value column; the summary (perfetto.protos.TraceSummary) has
// one bundle per metric (or per bundle_id shared by metrics over the same
// query), one row per result row of the query. docs/QUERY.md, "Trace
// summaries", is the user's guide.
//
// Computed as Perfetto's trace_processor v58 computes it, so that a spec
// gives the same summary from either:
//   - metric specs first (every spec's, in order), then metrics expanded from
//     metric_template_spec: one per value column, id "<id_prefix>_<column>",
//     bundled under id_prefix unless disable_auto_bundling;
//   - a row whose values are all NULL is left out; a NULL dimension is
//     null_value; a value is a double (integers converted); a string value is
//     an error;
//   - a dimension's type comes from dimensions_specs (the value must have
//     it, or be NULL) or, with plain `dimensions`, from each value;
//   - dimension_uniqueness UNIQUE makes two rows with the same dimensions an
//     error;
//   - metrics in one bundle must agree on bundle_id, dimensions,
//     dimension_uniqueness and query;
//   - the metadata query (by id among the specs' shared queries) gives
//     (key, value) string pairs; NULL values are skipped.
// Where sluice differs:
//   - bundles come in the order their first metric was asked for (upstream:
//     the order of a hash table);
//   - error messages are sluice's own; the same cases are errors;
//   - interned_dimension_specs are not supported (an error names them).
//
// No I/O and no printing here: the CLI (user/cmd/query_command.cc) and the
// HTTP server call ComputeTraceSummary and print with TraceSummaryText
// (trace_summary_text.h).
#ifndef SLUICE_USER_QUERY_SUMMARY_TRACE_SUMMARY_H_
#define SLUICE_USER_QUERY_SUMMARY_TRACE_SUMMARY_H_

#include <string>
#include <string_view>
#include <vector>

#include "perfetto/trace_summary/file.pb.h"
#include "shm/base/status.h"

struct sqlite3;

namespace sluice {

class SqlDialect;

// What to compute.
struct TraceSummaryComputation {
  // Every metric of the specs when true; else exactly `metric_ids` (none
  // when empty, as trace_processor_shell without --summary-metrics-v2).
  bool all_metrics = true;
  std::vector<std::string> metric_ids;
  // A shared query's id, for TraceSummary.metadata; empty for none.
  std::string metadata_query_id;
};

// Parses a text-format spec; errors are "line L column C: message".
Status ParseTraceSummarySpecText(std::string_view text, perfetto::protos::TraceSummarySpec* spec);

// Computes the summary of `specs` (taken together) on an engine's database:
// `db` and `dialect` are QueryEngine::db() and dialect(). Runs the specs'
// preambles and INCLUDEs on `db`, which keeps what they create.
StatusOr<perfetto::protos::TraceSummary> ComputeTraceSummary(
    sqlite3* db, SqlDialect* dialect, const std::vector<perfetto::protos::TraceSummarySpec>& specs,
    const TraceSummaryComputation& what);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_SUMMARY_TRACE_SUMMARY_H_
