#include "user/query/engine/operators/interval_intersect.h"

#include <string>

#include "user/query/engine/perfetto_sql/sql_tokenizer.h"

namespace sluice {
namespace {

constexpr size_t kMaxTables = 15;

// "(a, (SELECT x, y FROM t), b)" -> {"a", "(SELECT x, y FROM t)", "b"}; false
// if `text` is not one parenthesized list.
bool SplitList(const std::string& text, std::vector<std::string>* items) {
  const std::vector<SqlToken> tokens = SignificantSqlTokens(text);
  if (tokens.size() < 2 || !tokens.front().IsPunct('(') || !tokens.back().IsPunct(')')) return false;
  int depth = 0;
  size_t start = tokens.front().offset + 1;
  for (size_t i = 1; i + 1 < tokens.size(); i++) {
    const SqlToken& t = tokens[i];
    if (t.IsPunct('(')) depth++;
    if (t.IsPunct(')') && --depth < 0) return false;
    if (t.IsPunct(',') && depth == 0) {
      items->push_back(text.substr(start, t.offset - start));
      start = t.offset + 1;
    }
  }
  if (depth != 0) return false;
  const std::string last = text.substr(start, tokens.back().offset - start);
  if (last.find_first_not_of(" \t\r\n") != std::string::npos || !items->empty()) items->push_back(last);
  for (std::string& item : *items) {
    const size_t b = item.find_first_not_of(" \t\r\n"), e = item.find_last_not_of(" \t\r\n");
    if (b == std::string::npos) return false;
    item = item.substr(b, e - b + 1);
  }
  return true;
}

bool IntervalIntersect(const std::vector<std::string>& args, std::string* out, std::string* error) {
  std::vector<std::string> tables, partitions;
  if (!SplitList(args[0], &tables) || tables.size() < 2 || tables.size() > kMaxTables) {
    *error = "the first argument is a parenthesized list of 2 to 15 tables, (t0, t1, ...)";
    return false;
  }
  if (!SplitList(args[1], &partitions)) {
    *error = "the second argument is a parenthesized list of partition columns, or ()";
    return false;
  }
  auto alias = [](size_t i) { return "_ii" + std::to_string(i); };
  std::string starts, ends;
  for (size_t i = 0; i < tables.size(); i++) {
    starts += (i ? ", " : "") + alias(i) + ".ts";
    ends += (i ? ", " : "") + alias(i) + ".ts + " + alias(i) + ".dur";
  }
  const std::string s = "max(" + starts + ")", e = "min(" + ends + ")";
  std::string sql = "(SELECT " + s + " AS ts, max(" + e + " - " + s + ", 0) AS dur";
  for (size_t i = 0; i < tables.size(); i++) sql += ", " + alias(i) + ".id AS id_" + std::to_string(i);
  for (const std::string& p : partitions) sql += ", " + alias(0) + "." + p + " AS " + p;
  sql += " FROM " + tables[0] + " AS " + alias(0);
  for (size_t i = 1; i < tables.size(); i++) {
    sql += " JOIN " + tables[i] + " AS " + alias(i);
    std::string on;
    for (const std::string& p : partitions) on += (on.empty() ? "" : " AND ") + alias(0) + "." + p + " IS " + alias(i) + "." + p;
    sql += " ON " + (on.empty() ? std::string("1") : on);
  }
  // Shared time, or, where instants take part, each instant at the common
  // point and each interval holding it.
  std::string any_instant, each_holds;
  for (size_t i = 0; i < tables.size(); i++) {
    const std::string a = alias(i);
    any_instant += (i ? " OR " : "") + a + ".dur = 0";
    each_holds += (i ? " AND " : "") + std::string("CASE WHEN ") + a + ".dur = 0 THEN " + a + ".ts = " + s +
                  " ELSE " + s + " < " + a + ".ts + " + a + ".dur END";
  }
  sql += " WHERE " + s + " < " + e + " OR ((" + any_instant + ") AND " + each_holds + "))";
  *out = sql;
  return true;
}

bool IntervalIntersectSingle(const std::vector<std::string>& args, std::string* out, std::string*) {
  const std::string t = "(" + args[0] + ")", d = "(" + args[1] + ")";
  const std::string start = "max(_iis.ts, " + t + ")";
  *out = "(SELECT _iis.id AS id, " + start + " AS ts, max(min(_iis.ts + _iis.dur, " + t + " + " + d + ") - " + start +
         ", 0) AS dur FROM " + args[2] + " AS _iis WHERE CASE WHEN " + d + " = 0 AND _iis.dur = 0 THEN _iis.ts = " + t +
         " WHEN " + d + " = 0 THEN _iis.ts <= " + t + " AND " + t + " < _iis.ts + _iis.dur WHEN _iis.dur = 0 THEN " + t +
         " <= _iis.ts AND _iis.ts < " + t + " + " + d + " ELSE _iis.ts < " + t + " + " + d +
         " AND _iis.ts + _iis.dur > " + t + " END)";
  return true;
}

}  // namespace

std::vector<PerfettoSqlMacro> IntervalIntersectMacros() {
  PerfettoSqlMacro multi;
  multi.name = "_interval_intersect";
  multi.args = {{"tabs", "_TableNameList"}, {"agg_columns", "ColumnNameList"}};
  multi.return_kind = "TableOrSubquery";
  multi.native = IntervalIntersect;
  PerfettoSqlMacro single;
  single.name = "_interval_intersect_single";
  single.args = {{"ts", "Expr"}, {"dur", "Expr"}, {"t", "TableOrSubquery"}};
  single.return_kind = "TableOrSubquery";
  single.native = IntervalIntersectSingle;
  return {multi, single};
}

}  // namespace sluice
