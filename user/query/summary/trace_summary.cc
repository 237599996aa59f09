#include "user/query/summary/trace_summary.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <sqlite3.h>

#include <cinttypes>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "user/query/engine/sql_statements.h"
#include "user/query/summary/structured_query_sql.h"

namespace sluice {

namespace {

using perfetto::protos::PerfettoSqlStructuredQuery;
using perfetto::protos::TraceMetricV2Bundle;
using perfetto::protos::TraceMetricV2Spec;
using perfetto::protos::TraceMetricV2TemplateSpec;
using perfetto::protos::TraceSummary;
using perfetto::protos::TraceSummarySpec;

// The first error TextFormat reports, with its place counted from 1.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (error_.empty()) error_ = "line " + std::to_string(line + 1) + " column " + std::to_string(column + 1) + ": " + message;
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string&) override {}
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

// One metric to compute: its spec (as written, or expanded from a template)
// and its query's SQL.
struct Metric {
  TraceMetricV2Spec spec;
  std::string sql;
};

struct Dimension {
  std::string name;
  TraceMetricV2Spec::DimensionType type = TraceMetricV2Spec::DIMENSION_TYPE_UNSPECIFIED;
  bool operator==(const Dimension& o) const { return name == o.name && type == o.type; }
};

StatusOr<std::vector<Dimension>> Dimensions(const TraceMetricV2Spec& spec) {
  if (!spec.dimensions_specs().empty() && !spec.dimensions().empty())
    return Status::Error("metric '" + spec.id() + "' has both dimensions and dimensions_specs: give one");
  std::vector<Dimension> dimensions;
  for (const TraceMetricV2Spec::DimensionSpec& d : spec.dimensions_specs()) {
    if (d.type() == TraceMetricV2Spec::DIMENSION_TYPE_UNSPECIFIED)
      return Status::Error("dimension '" + d.name() + "' of metric '" + spec.id() + "' has no type");
    dimensions.push_back({d.name(), d.type()});
  }
  for (const std::string& d : spec.dimensions()) dimensions.push_back({d, TraceMetricV2Spec::DIMENSION_TYPE_UNSPECIFIED});
  return dimensions;
}

Status ExpandTemplate(const TraceMetricV2TemplateSpec& t, std::vector<TraceMetricV2Spec>* out) {
  if (t.id_prefix().empty()) return Status::Error("a metric_template_spec has no id_prefix");
  if (!t.value_columns().empty() && !t.value_column_specs().empty())
    return Status::Error("metric_template_spec '" + t.id_prefix() + "' has both value_columns and value_column_specs: give one");
  std::vector<TraceMetricV2TemplateSpec::ValueColumnSpec> columns;
  for (const std::string& name : t.value_columns()) {
    columns.emplace_back();
    columns.back().set_name(name);
  }
  for (const auto& c : t.value_column_specs()) columns.push_back(c);
  for (const auto& column : columns) {
    TraceMetricV2Spec spec;
    spec.set_id(t.id_prefix() + "_" + column.name());
    spec.set_value(column.name());
    if (column.has_unit()) spec.set_unit(column.unit());
    if (!column.custom_unit().empty()) spec.set_custom_unit(column.custom_unit());
    if (column.has_polarity()) spec.set_polarity(column.polarity());
    *spec.mutable_dimensions() = t.dimensions();
    *spec.mutable_dimensions_specs() = t.dimensions_specs();
    if (t.has_query()) *spec.mutable_query() = t.query();
    if (!t.disable_auto_bundling()) spec.set_bundle_id(t.id_prefix());
    if (t.has_dimension_uniqueness()) spec.set_dimension_uniqueness(t.dimension_uniqueness());
    *spec.mutable_interned_dimension_specs() = t.interned_dimension_specs();
    out->push_back(std::move(spec));
  }
  return Status::Ok();
}

bool EqualsIgnoringCase(const std::string& a, const char* b) {
  std::string lower;
  for (char c : a) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return lower == b;
}

// Runs `sql` (one SELECT, possibly with macros) and hands each row to
// `row`, after `columns` saw the column names.
// SQLite's errors are placed in the SQL and prefixed by `what`.
Status RunQuery(sqlite3* db, SqlDialect* dialect, const std::string& sql, const std::string& what,
                const std::function<Status(const std::vector<std::string>&)>& columns,
                const std::function<Status(sqlite3_stmt*)>& row) {
  // The summary's own errors are returned as they are, not placed in the
  // SQL as RunSqlScript places SQLite's.
  Status summary_error;
  Status ran = RunSqlScript(db, sql, [&](const SqlStatement& statement) -> Status {
    std::vector<std::string> names;
    for (int i = 0; i < sqlite3_column_count(statement.stmt); i++) names.push_back(sqlite3_column_name(statement.stmt, i));
    summary_error = columns(names);
    int rc = SQLITE_DONE;
    while (summary_error.ok() && (rc = sqlite3_step(statement.stmt)) == SQLITE_ROW) summary_error = row(statement.stmt);
    if (!summary_error.ok()) return summary_error;
    if (rc != SQLITE_DONE) return Status::Error(sqlite3_errmsg(sqlite3_db_handle(statement.stmt)));
    return Status::Ok();
  }, 1, dialect);
  if (!summary_error.ok()) return summary_error;
  if (!ran.ok()) return Status::Error(what + ": " + ran.message());
  return Status::Ok();
}

const char* SqliteTypeName(int type) {
  switch (type) {
    case SQLITE_INTEGER: return "an integer";
    case SQLITE_FLOAT: return "a double";
    case SQLITE_TEXT: return "a string";
    case SQLITE_BLOB: return "bytes";
  }
  return "NULL";
}

// The dimension's value in column `c` of the row; its text (with the type)
// goes to `key` for the uniqueness check.
Status WriteDimension(sqlite3_stmt* stmt, int c, const Dimension& d, const std::string& bundle,
                      TraceMetricV2Bundle::Row::Dimension* out, std::string* key) {
  const int type = sqlite3_column_type(stmt, c);
  key->push_back(static_cast<char>('0' + type));
  if (type == SQLITE_NULL) {
    out->mutable_null_value();
    key->push_back('\0');
    return Status::Ok();
  }
  auto mismatch = [&](const char* wanted) {
    return Status::Error("dimension '" + d.name + "' of bundle '" + bundle + "' is " + wanted + " but the query gave " +
                         SqliteTypeName(type));
  };
  const std::string text(reinterpret_cast<const char*>(sqlite3_column_text(stmt, c)),
                         static_cast<size_t>(sqlite3_column_bytes(stmt, c)));
  key->append(text).push_back('\0');
  switch (d.type) {
    case TraceMetricV2Spec::STRING:
      if (type != SQLITE_TEXT) return mismatch("a STRING");
      out->set_string_value(text);
      return Status::Ok();
    case TraceMetricV2Spec::INT64:
      if (type != SQLITE_INTEGER) return mismatch("an INT64");
      out->set_int64_value(sqlite3_column_int64(stmt, c));
      return Status::Ok();
    case TraceMetricV2Spec::DOUBLE:
      if (type != SQLITE_FLOAT) return mismatch("a DOUBLE");
      out->set_double_value(sqlite3_column_double(stmt, c));
      return Status::Ok();
    case TraceMetricV2Spec::BOOLEAN: {
      if (type != SQLITE_INTEGER) return mismatch("a BOOLEAN");
      const int64_t v = sqlite3_column_int64(stmt, c);
      if (v != 0 && v != 1)
        return Status::Error("dimension '" + d.name + "' of bundle '" + bundle + "' is a BOOLEAN but the query gave " +
                             std::to_string(v));
      out->set_bool_value(v == 1);
      return Status::Ok();
    }
    case TraceMetricV2Spec::DIMENSION_TYPE_UNSPECIFIED:
      break;
  }
  switch (type) {
    case SQLITE_INTEGER: out->set_int64_value(sqlite3_column_int64(stmt, c)); break;
    case SQLITE_FLOAT: out->set_double_value(sqlite3_column_double(stmt, c)); break;
    case SQLITE_TEXT: out->set_string_value(text); break;
    default:
      return Status::Error("dimension '" + d.name + "' of bundle '" + bundle + "' is bytes, which a dimension cannot be");
  }
  return Status::Ok();
}

Status CheckBundle(const std::string& bundle, const std::vector<const Metric*>& metrics) {
  const TraceMetricV2Spec& first = metrics.front()->spec;
  SLUICE_ASSIGN_OR_RETURN(std::vector<Dimension> first_dimensions, Dimensions(first));
  for (const Metric* m : metrics) {
    const std::string where = "metric '" + m->spec.id() + "' of bundle '" + bundle + "' differs from metric '" +
                              first.id() + "' in its ";
    if (m->spec.bundle_id() != first.bundle_id()) return Status::Error(where + "bundle_id");
    if (m->spec.dimension_uniqueness() != first.dimension_uniqueness())
      return Status::Error(where + "dimension_uniqueness");
    SLUICE_ASSIGN_OR_RETURN(std::vector<Dimension> dimensions, Dimensions(m->spec));
    if (!(dimensions == first_dimensions)) return Status::Error(where + "dimensions");
    if (m->sql != metrics.front()->sql) return Status::Error(where + "query");
  }
  return Status::Ok();
}

Status ComputeBundle(sqlite3* db, SqlDialect* dialect, const std::string& bundle_id,
                     const std::vector<const Metric*>& metrics, TraceMetricV2Bundle* bundle) {
  SLUICE_RETURN_IF_ERROR(CheckBundle(bundle_id, metrics));
  bundle->set_bundle_id(bundle_id);
  for (const Metric* m : metrics) *bundle->add_specs() = m->spec;
  const TraceMetricV2Spec& first = metrics.front()->spec;
  if (!first.interned_dimension_specs().empty())
    return Status::Error("metric '" + first.id() + "': interned_dimension_specs are not supported by sluice");
  SLUICE_ASSIGN_OR_RETURN(std::vector<Dimension> dimensions, Dimensions(first));
  std::vector<int> dimension_columns, value_columns;
  const bool unique = first.dimension_uniqueness() == TraceMetricV2Spec::UNIQUE;
  std::set<std::string> seen;
  auto on_columns = [&](const std::vector<std::string>& names) -> Status {
    auto find = [&](const std::string& name) {
      for (size_t i = 0; i < names.size(); i++)
        if (names[i] == name) return static_cast<int>(i);
      return -1;
    };
    // sql.column_names promise columns; checked only where the query keeps
    // the SQL's columns (no group_by or select_columns).
    const PerfettoSqlStructuredQuery& q = first.query();
    if (q.has_sql() && !q.has_group_by() && q.select_columns().empty()) {
      for (const std::string& c : q.sql().column_names())
        if (find(c) < 0) return Status::Error("bundle '" + bundle_id + "': its sql names column '" + c + "', which the query does not return");
    }
    for (const Dimension& d : dimensions) {
      int c = find(d.name);
      if (c < 0) return Status::Error("metric '" + first.id() + "': the query has no dimension column '" + d.name + "'");
      dimension_columns.push_back(c);
    }
    for (const Metric* m : metrics) {
      int c = find(m->spec.value());
      if (c < 0) return Status::Error("metric '" + m->spec.id() + "': the query has no value column '" + m->spec.value() + "'");
      value_columns.push_back(c);
    }
    return Status::Ok();
  };
  auto on_row = [&](sqlite3_stmt* stmt) -> Status {
    bool all_null = true;
    for (int c : value_columns) all_null = all_null && sqlite3_column_type(stmt, c) == SQLITE_NULL;
    if (all_null) return Status::Ok();
    TraceMetricV2Bundle::Row* row = bundle->add_row();
    std::string key;
    for (size_t i = 0; i < dimensions.size(); i++)
      SLUICE_RETURN_IF_ERROR(WriteDimension(stmt, dimension_columns[i], dimensions[i], bundle_id, row->add_dimension(), &key));
    if (unique && !seen.insert(key).second)
      return Status::Error("bundle '" + bundle_id + "' has two rows with the same dimensions, and its dimension_uniqueness is UNIQUE");
    for (size_t i = 0; i < value_columns.size(); i++) {
      const int c = value_columns[i];
      TraceMetricV2Bundle::Row::Value* value = row->add_values();
      switch (sqlite3_column_type(stmt, c)) {
        case SQLITE_NULL: value->mutable_null_value(); break;
        case SQLITE_INTEGER: value->set_double_value(static_cast<double>(sqlite3_column_int64(stmt, c))); break;
        case SQLITE_FLOAT: value->set_double_value(sqlite3_column_double(stmt, c)); break;
        default:
          return Status::Error("metric '" + metrics[i]->spec.id() + "': its value column holds a string or bytes; values are numbers");
      }
    }
    return Status::Ok();
  };
  return RunQuery(db, dialect, metrics.front()->sql, "the query of bundle '" + bundle_id + "'", on_columns, on_row);
}

Status ComputeMetadata(sqlite3* db, SqlDialect* dialect, const std::string& sql, TraceSummary* summary) {
  bool any_columns = true;
  auto on_columns = [&](const std::vector<std::string>& names) -> Status {
    any_columns = !names.empty();
    if (any_columns && (names.size() != 2 || names[0] != "key" || names[1] != "value"))
      return Status::Error("the metadata query must return two columns, key and value");
    return Status::Ok();
  };
  auto on_row = [&](sqlite3_stmt* stmt) -> Status {
    if (sqlite3_column_type(stmt, 0) != SQLITE_TEXT) return Status::Error("the metadata query gave a key that is not a string");
    if (sqlite3_column_type(stmt, 1) == SQLITE_NULL) return Status::Ok();
    if (sqlite3_column_type(stmt, 1) != SQLITE_TEXT)
      return Status::Error("the metadata query gave a value that is neither a string nor NULL");
    TraceSummary::Metadata* m = summary->add_metadata();
    m->set_key(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
    m->set_value(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1)));
    return Status::Ok();
  };
  return RunQuery(db, dialect, sql, "the metadata query", on_columns, on_row);
}

}  // namespace

Status ParseTraceSummarySpecText(std::string_view text, TraceSummarySpec* spec) {
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), spec))
    return Status::Error(errors.error().empty() ? "not a TraceSummarySpec" : errors.error());
  return Status::Ok();
}

StatusOr<TraceSummary> ComputeTraceSummary(sqlite3* db, SqlDialect* dialect, const std::vector<TraceSummarySpec>& specs,
                                           const TraceSummaryComputation& what) {
  StructuredQuerySql generator;
  for (const TraceSummarySpec& spec : specs)
    for (const PerfettoSqlStructuredQuery& q : spec.query()) SLUICE_RETURN_IF_ERROR(generator.AddSharedQuery(q));

  std::vector<TraceMetricV2Spec> defined;
  for (const TraceSummarySpec& spec : specs)
    for (const TraceMetricV2Spec& m : spec.metric_spec()) defined.push_back(m);
  for (const TraceSummarySpec& spec : specs)
    for (const TraceMetricV2TemplateSpec& t : spec.metric_template_spec()) SLUICE_RETURN_IF_ERROR(ExpandTemplate(t, &defined));

  std::vector<std::string> ids = what.metric_ids;
  if (what.all_metrics) {
    ids.clear();
    for (const TraceMetricV2Spec& m : defined) ids.push_back(m.id());
  }
  std::map<std::string, size_t> index_of;
  for (const std::string& id : ids) {
    if (EqualsIgnoringCase(id, "all")) return Status::Error("'all' is reserved and cannot be a metric's id");
    if (!index_of.emplace(id, index_of.size()).second) return Status::Error("metric '" + id + "' is asked for twice");
  }
  std::vector<std::optional<Metric>> metrics(ids.size());
  for (const TraceMetricV2Spec& m : defined) {
    if (m.id().empty()) return Status::Error("a metric_spec has no id");
    auto it = index_of.find(m.id());
    if (it == index_of.end()) continue;
    if (metrics[it->second]) return Status::Error("metric '" + m.id() + "' is defined twice");
    StatusOr<std::string> sql = generator.Generate(m.query());
    if (!sql.ok()) return Status::Error("metric '" + m.id() + "': " + sql.status().message());
    metrics[it->second] = Metric{m, *sql};
  }
  for (size_t i = 0; i < ids.size(); i++)
    if (!metrics[i]) return Status::Error("metric '" + ids[i] + "' is not defined by any spec");

  std::string metadata_sql;
  if (!what.metadata_query_id.empty()) {
    StatusOr<std::string> sql = generator.GenerateById(what.metadata_query_id);
    if (!sql.ok()) return Status::Error("metadata query: " + sql.status().message());
    metadata_sql = *sql;
  }

  // Preambles, then modules, before any query: as upstream, a preamble
  // cannot rely on a module INCLUDEd for a query.
  for (const std::string& preamble : generator.preambles()) {
    Status ran = RunSqlScript(db, preamble, [](const SqlStatement& s) -> Status {
      int rc = sqlite3_step(s.stmt);
      if (rc == SQLITE_ROW) return Status::Error("a preamble statement returned rows; only the last statement of sql may");
      if (rc != SQLITE_DONE) return Status::Error(sqlite3_errmsg(sqlite3_db_handle(s.stmt)));
      return Status::Ok();
    }, 1, dialect);
    if (!ran.ok()) return Status::Error("preamble: " + ran.message());
  }
  for (const std::string& module : generator.referenced_modules()) {
    Status ran = RunSqlScript(db, "INCLUDE PERFETTO MODULE " + module,
                              [](const SqlStatement& s) { return StepToEnd(s.stmt); }, 1, dialect);
    if (!ran.ok()) return Status::Error("INCLUDE PERFETTO MODULE " + module + ": " + ran.message());
  }

  // Bundles in the order their first metric was asked for.
  std::vector<std::string> bundle_order;
  std::map<std::string, std::vector<const Metric*>> by_bundle;
  for (const std::optional<Metric>& m : metrics) {
    const std::string bundle = m->spec.bundle_id().empty() ? m->spec.id() : m->spec.bundle_id();
    auto [it, added] = by_bundle.try_emplace(bundle);
    if (added) bundle_order.push_back(bundle);
    it->second.push_back(&*m);
  }
  TraceSummary summary;
  for (const std::string& bundle : bundle_order)
    SLUICE_RETURN_IF_ERROR(ComputeBundle(db, dialect, bundle, by_bundle[bundle], summary.add_metric_bundles()));
  if (!metadata_sql.empty()) SLUICE_RETURN_IF_ERROR(ComputeMetadata(db, dialect, metadata_sql, &summary));
  return summary;
}

}  // namespace sluice
