#include "user/query/summary/structured_query_sql.h"

#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <optional>
#include <utility>

#include "user/query/engine/perfetto_sql/sql_tokenizer.h"
#include "user/query/engine/sql_statements.h"

namespace sluice {

namespace {

using Query = StructuredQuerySql::Query;
using Filter = Query::Filter;
using Aggregate = Query::GroupBy::Aggregate;

std::string SqlStringLiteral(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  return quoted + "'";
}

// Shortest text that reads back as the same double (upstream prints six
// decimals, which turns 1e-9 into 0).
std::string DoubleLiteral(double value) {
  char text[40];
  snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

// Splits `sql` into the statements before its last one and the last one
// (without its ';'), where the engine splits a script (FindSqlStatementEnd:
// a trigger body's ';' does not end a statement).
std::pair<std::string, std::string> SplitLastStatement(const std::string& sql) {
  size_t last_start = std::string::npos, last_end = 0;
  for (size_t start = SkipSqlSeparators(sql, 0); start < sql.size(); start = SkipSqlSeparators(sql, last_end)) {
    const size_t end = FindSqlStatementEnd(sql, start);
    if (end <= start) break;
    last_start = start;
    last_end = end;
  }
  if (last_start == std::string::npos) return {"", ""};
  std::string last = sql.substr(last_start, last_end - last_start);
  while (!last.empty() && (last.back() == ';' || isspace(static_cast<unsigned char>(last.back())))) last.pop_back();
  std::string before = SkipSqlSeparators(sql, 0) == last_start ? "" : sql.substr(0, last_start);
  return {before, last};
}

bool IsIdentifierChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// `sql` with every `$alias` outside quotes and comments replaced by `name`.
std::string ReplaceVariable(const std::string& sql, const std::string& alias, const std::string& name) {
  std::string out;
  size_t i = 0;
  while (i < sql.size()) {
    const char c = sql[i];
    size_t skip_to = i;
    if (c == '\'' || c == '"' || c == '`' || c == '[') {
      size_t end = sql.find(c == '[' ? ']' : c, i + 1);
      skip_to = end == std::string::npos ? sql.size() : end + 1;
    } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      size_t end = sql.find('\n', i);
      skip_to = end == std::string::npos ? sql.size() : end + 1;
    } else if (c == '/' && i + 1 < sql.size() && sql[i + 1] == '*') {
      size_t end = sql.find("*/", i + 2);
      skip_to = end == std::string::npos ? sql.size() : end + 2;
    } else if (c == '$') {
      size_t end = i + 1;
      while (end < sql.size() && IsIdentifierChar(sql[end])) ++end;
      if (sql.compare(i + 1, end - i - 1, alias) == 0 && end - i - 1 == alias.size()) {
        out += name;
      } else {
        out.append(sql, i, end - i);
      }
      i = end;
      continue;
    }
    if (skip_to > i) {
      out.append(sql, i, skip_to - i);
      i = skip_to;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

StatusOr<std::string> OperatorSql(Filter::Operator op) {
  switch (op) {
    case Filter::EQUAL: return std::string("=");
    case Filter::NOT_EQUAL: return std::string("!=");
    case Filter::LESS_THAN: return std::string("<");
    case Filter::LESS_THAN_EQUAL: return std::string("<=");
    case Filter::GREATER_THAN: return std::string(">");
    case Filter::GREATER_THAN_EQUAL: return std::string(">=");
    case Filter::GLOB: return std::string("GLOB");
    case Filter::IS_NULL: return std::string("IS NULL");
    case Filter::IS_NOT_NULL: return std::string("IS NOT NULL");
    case Filter::UNKNOWN: break;
  }
  return Status::Error("no operator");
}

StatusOr<std::string> FilterSql(const Filter& filter) {
  const std::string& column = filter.column_name();
  StatusOr<std::string> op = OperatorSql(filter.op());
  if (!op.ok()) return Status::Error("filter on '" + column + "' has no operator (op)");
  if (filter.op() == Filter::IS_NULL || filter.op() == Filter::IS_NOT_NULL) return column + " " + *op;
  std::vector<std::string> rhs;
  for (const std::string& s : filter.string_rhs()) rhs.push_back(SqlStringLiteral(s));
  if (rhs.empty())
    for (double d : filter.double_rhs()) rhs.push_back(DoubleLiteral(d));
  if (rhs.empty())
    for (int64_t i : filter.int64_rhs()) rhs.push_back(std::to_string(i));
  if (rhs.empty()) return Status::Error("filter on '" + column + "' has no right-hand side (string_rhs, double_rhs or int64_rhs)");
  // Several values are alternatives; the parentheses keep the OR inside
  // this filter when filters are ANDed (or grouped).
  std::string sql;
  for (const std::string& value : rhs) sql += (sql.empty() ? "" : " OR ") + column + " " + *op + " " + value;
  return rhs.size() > 1 ? "(" + sql + ")" : sql;
}

StatusOr<std::string> FilterGroupSql(const Query::ExperimentalFilterGroup& group) {
  std::string joiner;
  if (group.op() == Query::ExperimentalFilterGroup::AND) {
    joiner = " AND ";
  } else if (group.op() == Query::ExperimentalFilterGroup::OR) {
    joiner = " OR ";
  } else {
    return Status::Error("experimental_filter_group has no operator (op: AND or OR)");
  }
  std::vector<std::string> terms;
  for (const Filter& f : group.filters()) {
    SLUICE_ASSIGN_OR_RETURN(std::string term, FilterSql(f));
    terms.push_back(std::move(term));
  }
  for (const Query::ExperimentalFilterGroup& g : group.groups()) {
    SLUICE_ASSIGN_OR_RETURN(std::string term, FilterGroupSql(g));
    terms.push_back("(" + term + ")");
  }
  for (const std::string& expression : group.sql_expressions()) terms.push_back(expression);
  if (terms.empty()) return Status::Error("experimental_filter_group has no filter, group or sql_expression");
  std::string sql;
  for (const std::string& t : terms) sql += (sql.empty() ? "" : joiner) + t;
  return sql;
}

StatusOr<std::string> AggregateSql(const Aggregate& aggregate) {
  const std::string& column = aggregate.column_name();
  if (aggregate.op() == Aggregate::COUNT && !aggregate.has_column_name()) return std::string("COUNT(*)");
  if (aggregate.op() == Aggregate::CUSTOM) {
    if (!aggregate.has_custom_sql_expression())
      return Status::Error("CUSTOM aggregate '" + aggregate.result_column_name() + "' has no custom_sql_expression");
    return aggregate.custom_sql_expression();
  }
  if (!aggregate.has_column_name())
    return Status::Error("aggregate '" + aggregate.result_column_name() + "' has no column_name");
  switch (aggregate.op()) {
    case Aggregate::COUNT: return "COUNT(" + column + ")";
    case Aggregate::COUNT_DISTINCT: return "COUNT(DISTINCT " + column + ")";
    case Aggregate::SUM: return "SUM(" + column + ")";
    case Aggregate::MIN: return "MIN(" + column + ")";
    case Aggregate::MAX: return "MAX(" + column + ")";
    case Aggregate::MEAN: return "AVG(" + column + ")";
    // percentile() is sluice's (percentile_functions.h), as SQLite's
    // extension defines it: P from 0 to 100, interpolated.
    case Aggregate::MEDIAN: return "percentile(" + column + ", 50)";
    case Aggregate::PERCENTILE:
      if (!aggregate.has_percentile())
        return Status::Error("PERCENTILE aggregate '" + aggregate.result_column_name() + "' has no percentile");
      return "percentile(" + column + ", " + DoubleLiteral(aggregate.percentile()) + ")";
    // The mean of the column over time: each row weighs its dur. As a REAL
    // division, so integer columns do not truncate.
    case Aggregate::DURATION_WEIGHTED_MEAN:
      return "SUM(CAST((" + column + ") * dur AS REAL)) / CAST(SUM(dur) AS REAL)";
    case Aggregate::CUSTOM:
    case Aggregate::UNSPECIFIED: break;
  }
  return Status::Error("aggregate '" + aggregate.result_column_name() + "' has no operator (op)");
}

// Deprecated fields that specs written for older trace processors still use:
// read them, as upstream does.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
std::string SelectColumnText(const Query::SelectColumn& column) {
  return column.has_column_name_or_expression() ? column.column_name_or_expression() : column.column_name();
}
const std::string* Preamble(const Query::Sql& source) { return source.has_preamble() ? &source.preamble() : nullptr; }
const std::string& TableModule(const Query::Table& table) { return table.module_name(); }
#pragma GCC diagnostic pop

StatusOr<std::string> GroupedSelectList(const Query::GroupBy& group_by,
                                        const google::protobuf::RepeatedPtrField<Query::SelectColumn>& select) {
  // Name -> alias (empty for none); without select_columns every group-by
  // column and aggregate is kept under its own name.
  std::map<std::string, std::string> kept;
  if (!select.empty()) {
    for (const Query::SelectColumn& column : select)
      kept.emplace(SelectColumnText(column), column.has_alias() ? column.alias() : "");
  } else {
    for (const std::string& column : group_by.column_names()) kept.emplace(column, "");
    for (const Aggregate& aggregate : group_by.aggregates()) kept.emplace(aggregate.result_column_name(), "");
  }
  std::string sql;
  for (const std::string& column : group_by.column_names()) {
    auto it = kept.find(column);
    if (it == kept.end()) continue;
    sql += (sql.empty() ? "" : ", ") + column + (it->second.empty() ? "" : " AS " + it->second);
  }
  for (const Aggregate& aggregate : group_by.aggregates()) {
    auto it = kept.find(aggregate.result_column_name());
    if (it == kept.end()) continue;
    SLUICE_ASSIGN_OR_RETURN(std::string expression, AggregateSql(aggregate));
    sql += (sql.empty() ? "" : ", ") + expression + " AS " +
           (it->second.empty() ? aggregate.result_column_name() : it->second);
  }
  if (sql.empty()) return Status::Error("group_by keeps no column: select_columns names none of its columns or aggregates");
  return sql;
}

// The experimental source a query uses, if any: none is supported.
const char* UnsupportedSource(const Query& q) {
  if (q.has_experimental_join()) return "experimental_join";
  if (q.has_experimental_union()) return "experimental_union";
  if (q.has_experimental_add_columns()) return "experimental_add_columns";
  if (q.has_experimental_create_slices()) return "experimental_create_slices";
  if (q.has_experimental_time_range()) return "experimental_time_range";
  if (q.has_experimental_filter_to_intervals()) return "experimental_filter_to_intervals";
  if (q.has_experimental_counter_intervals()) return "experimental_counter_intervals";
  if (q.has_experimental_filter_in()) return "experimental_filter_in";
  return nullptr;
}

}  // namespace

// One Generate call: the tree of query nodes under a root, each a CTE.
class StructuredQuerySql::Builder {
 public:
  explicit Builder(StructuredQuerySql* owner) : owner_(owner) {}

  // `shared_id` when the root is itself a shared query.
  StatusOr<std::string> Build(const Query& root, const std::optional<std::string>& shared_id) {
    if (shared_id) open_shared_.push_back(*shared_id);
    SLUICE_ASSIGN_OR_RETURN(size_t index, AddNode(root, shared_id));
    return SelfContained(index);
  }

 private:
  struct Node {
    std::string name;
    std::optional<std::string> shared_id;
    std::string sql;
    std::vector<size_t> reads;  // Nodes whose CTE this one's SQL names.
  };

  // "WITH <what `index` reads, each after what it reads> SELECT * FROM it".
  std::string SelfContained(size_t index) const {
    std::vector<bool> placed(nodes_.size(), false);
    std::string ctes;
    std::function<void(size_t)> place = [&](size_t i) {
      if (placed[i]) return;
      placed[i] = true;
      for (size_t r : nodes_[i].reads) place(r);
      ctes += (ctes.empty() ? "WITH " : ",\n") + nodes_[i].name + " AS (\n" + nodes_[i].sql + "\n)";
    };
    place(index);
    return ctes + "\nSELECT * FROM " + nodes_[index].name;
  }

  // A node for `query`, its SQL built (and its children's); returns its index.
  StatusOr<size_t> AddNode(const Query& query, std::optional<std::string> shared_id) {
    const size_t index = nodes_.size();
    nodes_.push_back(Node{"_summary_q" + std::to_string(index), shared_id, "", {}});
    SLUICE_ASSIGN_OR_RETURN(std::string sql, NodeSql(query, index));
    nodes_[index].sql = std::move(sql);
    return index;
  }

  StatusOr<std::string> Child(const Query& query, size_t parent) {
    SLUICE_ASSIGN_OR_RETURN(size_t child, AddNode(query, std::nullopt));
    nodes_[parent].reads.push_back(child);
    return nodes_[child].name;
  }

  StatusOr<std::string> SharedChild(const std::string& id, size_t parent) {
    // A shared query that reads itself (directly or not) has no end.
    for (const std::string& open : open_shared_)
      if (open == id) return Status::Error("shared query '" + id + "' reads itself through inner_query_id");
    auto shared = owner_->shared_.find(id);
    if (shared == owner_->shared_.end()) return Status::Error("no shared query has id '" + id + "'");
    for (size_t i = 0; i < nodes_.size(); i++) {
      if (nodes_[i].shared_id == id) {
        nodes_[parent].reads.push_back(i);
        return nodes_[i].name;
      }
    }
    open_shared_.push_back(id);
    StatusOr<size_t> child = AddNode(shared->second, id);
    open_shared_.pop_back();
    if (!child.ok()) return child.status();
    nodes_[parent].reads.push_back(*child);
    return nodes_[*child].name;
  }

  StatusOr<std::string> SqlSource(const Query::Sql& source, size_t index) {
    if (source.sql().empty()) return Status::Error("sql source has no sql");
    auto [before, last] = SplitLastStatement(source.sql());
    if (const std::string* preamble = Preamble(source)) {
      if (!before.empty())
        return Status::Error("sql source has both a preamble and several statements: put them all in sql");
      owner_->preambles_.push_back(*preamble);
    } else if (!before.empty()) {
      owner_->preambles_.push_back(before);
    }
    if (last.empty()) return Status::Error("sql source has no statement");
    for (const Query::Sql::Dependency& dependency : source.dependencies()) {
      SLUICE_ASSIGN_OR_RETURN(std::string name, Child(dependency.query(), index));
      last = ReplaceVariable(last, dependency.alias(), name);
    }
    std::string columns;
    for (const std::string& c : source.column_names()) columns += (columns.empty() ? "" : ", ") + c;
    return "(SELECT " + (columns.empty() ? std::string("*") : columns) + " FROM (\n" + last + "\n))";
  }

  StatusOr<std::string> IntervalIntersectSource(const Query::IntervalIntersect& ii, size_t index) {
    if (!ii.has_base()) return Status::Error("interval_intersect has no base query");
    if (ii.interval_intersect().empty()) return Status::Error("interval_intersect has no interval_intersect query");
    std::set<std::string> seen;
    for (const std::string& column : ii.partition_columns()) {
      std::string lower;
      for (char c : column) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      if (lower.empty() || lower == "id" || lower == "ts" || lower == "dur")
        return Status::Error("interval_intersect cannot partition by '" + column + "'");
      if (!seen.insert(lower).second)
        return Status::Error("interval_intersect partitions by '" + column + "' twice");
    }
    owner_->AddModule("intervals.intersect");
    // The operator reads each input in a statement of its own, where this
    // query's CTEs are not visible: it gets each input whole, as a
    // subquery; the join back to the inputs' other columns is here.
    std::vector<const Query*> inputs = {&ii.base()};
    for (const Query& q : ii.interval_intersect()) inputs.push_back(&q);
    std::vector<std::string> names, subqueries;
    for (const Query* q : inputs) {
      SLUICE_ASSIGN_OR_RETURN(std::string name, Child(*q, index));
      names.push_back(name);
      subqueries.push_back("(" + SelfContained(nodes_[index].reads.back()) + ")");
    }
    std::string partitions;
    for (const std::string& c : ii.partition_columns()) partitions += (partitions.empty() ? "" : ", ") + c;
    std::string sql = "(SELECT ii.ts, ii.dur";
    for (const std::string& c : ii.partition_columns()) sql += ", ii." + c;
    for (size_t i = 0; i < names.size(); i++) {
      const std::string n = std::to_string(i), t = "_summary_in" + n;
      sql += ", " + t + ".id AS id_" + n + ", " + t + ".ts AS ts_" + n + ", " + t + ".dur AS dur_" + n + ", " + t + ".*";
    }
    std::string tables;
    for (const std::string& s : subqueries) tables += (tables.empty() ? "" : ", ") + s;
    sql += "\nFROM _interval_intersect!((" + tables + "), (" + partitions + ")) AS ii";
    for (size_t i = 0; i < names.size(); i++) {
      const std::string n = std::to_string(i);
      sql += "\nJOIN " + names[i] + " AS _summary_in" + n + " ON ii.id_" + n + " = _summary_in" + n + ".id";
    }
    return sql + ")";
  }

  StatusOr<std::string> Source(const Query& q, size_t index) {
    if (const char* unsupported = UnsupportedSource(q))
      return Status::Error(std::string(unsupported) + " is not supported by sluice's trace summaries");
    if (q.has_table()) {
      if (q.table().table_name().empty()) return Status::Error("table source has no table_name");
      if (!TableModule(q.table()).empty()) owner_->AddModule(TableModule(q.table()));
      return q.table().table_name();
    }
    if (q.has_simple_slices()) {
      owner_->AddModule("slices.with_context");
      const Query::SimpleSlices& s = q.simple_slices();
      std::string where;
      auto match = [&](bool has, const char* column, const std::string& glob) {
        if (has) where += (where.empty() ? " WHERE " : " AND ") + std::string(column) + " GLOB " + SqlStringLiteral(glob);
      };
      match(s.has_slice_name_glob(), "name", s.slice_name_glob());
      match(s.has_thread_name_glob(), "thread_name", s.thread_name_glob());
      match(s.has_process_name_glob(), "process_name", s.process_name_glob());
      match(s.has_track_name_glob(), "track_name", s.track_name_glob());
      return "(SELECT id, ts, dur, name AS slice_name, thread_name, process_name, track_name "
             "FROM thread_or_process_slice" + where + ")";
    }
    if (q.has_interval_intersect()) return IntervalIntersectSource(q.interval_intersect(), index);
    if (q.has_sql()) return SqlSource(q.sql(), index);
    if (q.has_inner_query()) return Child(q.inner_query(), index);
    if (q.has_inner_query_id()) return SharedChild(q.inner_query_id(), index);
    return Status::Error("query has no source (table, sql, simple_slices, inner_query, inner_query_id or "
                         "interval_intersect)");
  }

  StatusOr<std::string> NodeSql(const Query& q, size_t index) {
    for (const std::string& module : q.referenced_modules()) owner_->AddModule(module);
    SLUICE_ASSIGN_OR_RETURN(std::string source, Source(q, index));
    std::string where;
    if (q.has_experimental_filter_group()) {
      SLUICE_ASSIGN_OR_RETURN(where, FilterGroupSql(q.experimental_filter_group()));
    } else {
      for (const Filter& filter : q.filters()) {
        SLUICE_ASSIGN_OR_RETURN(std::string term, FilterSql(filter));
        where += (where.empty() ? "" : " AND ") + term;
      }
    }
    std::string select, group_by;
    if (q.has_group_by()) {
      SLUICE_ASSIGN_OR_RETURN(select, GroupedSelectList(q.group_by(), q.select_columns()));
      for (const std::string& column : q.group_by().column_names())
        group_by += (group_by.empty() ? "GROUP BY " : ", ") + column;
    } else if (q.select_columns().empty()) {
      select = "*";
    } else {
      for (const Query::SelectColumn& column : q.select_columns())
        select += (select.empty() ? "" : ", ") + SelectColumnText(column) +
                  (column.has_alias() ? " AS " + column.alias() : "");
    }
    std::string sql = "SELECT " + select + "\nFROM " + source;
    if (!where.empty()) sql += "\nWHERE " + where;
    if (!group_by.empty()) sql += "\n" + group_by;
    if (q.has_order_by()) {
      if (q.order_by().ordering_specs().empty()) return Status::Error("order_by has no ordering_specs");
      std::string order;
      for (const Query::OrderBy::OrderingSpec& spec : q.order_by().ordering_specs()) {
        if (spec.column_name().empty()) return Status::Error("order_by has an ordering spec without column_name");
        order += (order.empty() ? "ORDER BY " : ", ") + spec.column_name() +
                 (spec.direction() == Query::OrderBy::DESC ? " DESC" : spec.direction() == Query::OrderBy::ASC ? " ASC" : "");
      }
      sql += "\n" + order;
    }
    if (q.has_offset() && !q.has_limit()) return Status::Error("offset needs a limit");
    if (q.has_limit()) {
      if (q.limit() < 0) return Status::Error("limit is negative (" + std::to_string(q.limit()) + ")");
      sql += "\nLIMIT " + std::to_string(q.limit());
    }
    if (q.has_offset()) {
      if (q.offset() < 0) return Status::Error("offset is negative (" + std::to_string(q.offset()) + ")");
      sql += "\nOFFSET " + std::to_string(q.offset());
    }
    return sql;
  }

  StructuredQuerySql* owner_;
  std::vector<Node> nodes_;
  std::vector<std::string> open_shared_;
};

Status StructuredQuerySql::AddSharedQuery(const Query& query) {
  if (!query.has_id()) return Status::Error("a shared query (TraceSummarySpec.query) has no id");
  if (!shared_.emplace(query.id(), query).second)
    return Status::Error("two shared queries have the id '" + query.id() + "'");
  // Their modules are included even when no metric reads them, as upstream
  // does.
  for (const std::string& module : query.referenced_modules()) AddModule(module);
  if (query.has_table() && !TableModule(query.table()).empty()) AddModule(TableModule(query.table()));
  return Status::Ok();
}

StatusOr<std::string> StructuredQuerySql::Generate(const Query& query) {
  Builder builder(this);
  return builder.Build(query, std::nullopt);
}

StatusOr<std::string> StructuredQuerySql::GenerateById(const std::string& id) {
  auto it = shared_.find(id);
  if (it == shared_.end()) return Status::Error("no shared query has id '" + id + "'");
  Builder builder(this);
  return builder.Build(it->second, id);
}

void StructuredQuerySql::AddModule(const std::string& name) {
  if (module_set_.insert(name).second) modules_.push_back(name);
}

}  // namespace sluice
