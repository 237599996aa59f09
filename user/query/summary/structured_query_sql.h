// Structured queries (perfetto.protos.PerfettoSqlStructuredQuery) as SQL for
// sluice's engine: the building block of trace summaries (trace_summary.h).
//
// A structured query is a source of rows (a table, a PerfettoSQL statement,
// slices matched by name, another structured query given inline or by the id
// of a shared query, or the intersection of interval sets) followed by
// operations applied in SQL's own order: filters (WHERE), group_by with
// aggregates (GROUP BY), select_columns, order_by, limit and offset. The
// result is ONE SELECT statement:
//
//   WITH _summary_q3 AS (SELECT ... FROM thread_state WHERE state = 'R'),
//        _summary_q1 AS (SELECT ... FROM _summary_q3 ...),
//        _summary_q0 AS (SELECT ... FROM _summary_q1 GROUP BY utid)
//   SELECT * FROM _summary_q0
//
// Each query node is one common table expression, named by its position in
// the tree, so that an Sql source's `$alias` (a dependency) can be replaced by
// a name that works wherever a table name does (`FROM $a`, `$a.col`). A shared
// query referenced twice is one CTE. The CTEs are ordered so that each one
// follows the ones it reads.
//
// The statement may use PerfettoSQL macros (`_interval_intersect!`): run it
// through the dialect (RunSqlScript with QueryEngine::dialect()), after
// running preambles() and INCLUDE PERFETTO MODULE for each of
// referenced_modules().
//
// Which columns come out, and in which order, follows Perfetto's
// trace_processor (v58), since a trace summary reads its dimensions and
// values by column name:
//   - group_by without select_columns: the group-by columns, then each
//     aggregate as its result_column_name;
//   - group_by with select_columns: the same list, keeping only the columns a
//     select column names (by exact text), renamed by its alias; a select
//     column that names neither a group-by column nor an aggregate is dropped;
//   - interval_intersect: ts, dur, the partition columns, then for the base
//     query id_0, ts_0, dur_0 and all its columns, then the same for each
//     interval query with suffixes _1, _2, ...
//
// Not supported (Generate fails with one line naming the field): the
// experimental_* sources (join, union, add_columns, create_slices,
// time_range, filter_to_intervals, counter_intervals, filter_in).
#ifndef SLUICE_USER_QUERY_SUMMARY_STRUCTURED_QUERY_SQL_H_
#define SLUICE_USER_QUERY_SUMMARY_STRUCTURED_QUERY_SQL_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "perfetto/perfetto_sql/structured_query.pb.h"
#include "shm/base/status.h"

namespace sluice {

class StructuredQuerySql {
 public:
  using Query = perfetto::protos::PerfettoSqlStructuredQuery;

  // A query that others reference by `inner_query_id` (a TraceSummarySpec's
  // `query` field). Fails when it has no id or the id is already taken.
  Status AddSharedQuery(const Query& query);
  bool HasSharedQuery(const std::string& id) const { return shared_.count(id) > 0; }

  // The SELECT for `query`; adds to referenced_modules() and preambles().
  StatusOr<std::string> Generate(const Query& query);
  // The same for the shared query `id`.
  StatusOr<std::string> GenerateById(const std::string& id);

  // Modules to INCLUDE before running any generated statement, in the order
  // first referenced, each once: a query's referenced_modules, a table's
  // module_name, slices.with_context for simple_slices and
  // intervals.intersect for interval_intersect.
  const std::vector<std::string>& referenced_modules() const { return modules_; }
  // Statements to run first, in order: an Sql source's statements before its
  // last one, and its `preamble` field.
  const std::vector<std::string>& preambles() const { return preambles_; }

 private:
  class Builder;
  void AddModule(const std::string& name);

  std::map<std::string, Query> shared_;
  std::vector<std::string> modules_;
  std::set<std::string> module_set_;
  std::vector<std::string> preambles_;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_SUMMARY_STRUCTURED_QUERY_SQL_H_
