#include "user/query/engine/operators/interval_intersect.h"

#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
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

// ---- _interval_intersect!: a table-valued function per (tables, partition
// columns) shape, __intrinsic_interval_intersect_N_M, that the macro calls
// with each table's SQL and the partition columns' names. ----

struct Shape {
  int tables;
  int partitions;
};

// One interval of one table, with the ids of the rows it stands for (one
// id for an input row; one per table folded in so far for a result).
struct Interval {
  int64_t ts;
  int64_t end;
  bool instant;
  std::vector<int64_t> ids;
};

// A partition's key as bytes (type, then value), NULL matching NULL.
std::string KeyOf(sqlite3_stmt* stmt, int first, int n) {
  std::string key;
  for (int i = first; i < first + n; i++) {
    const int type = sqlite3_column_type(stmt, i);
    key += static_cast<char>(type);
    if (type == SQLITE_INTEGER) {
      const int64_t v = sqlite3_column_int64(stmt, i);
      key.append(reinterpret_cast<const char*>(&v), sizeof(v));
    } else if (type == SQLITE_FLOAT) {
      const double v = sqlite3_column_double(stmt, i);
      key.append(reinterpret_cast<const char*>(&v), sizeof(v));
    } else if (type != SQLITE_NULL) {
      const int bytes = sqlite3_column_bytes(stmt, i);
      key.append(std::to_string(bytes) + ":");
      key.append(reinterpret_cast<const char*>(sqlite3_column_blob(stmt, i)), static_cast<size_t>(bytes));
    }
  }
  return key;
}

// Every pair of `a` and `b` (each sorted by ts) that shares time, as one
// interval of the shared time, ids of `a` then of `b`: a sweep over the
// starts in ts order, each start meeting the other side's intervals still
// open (an instant is open at its own ts only). Allocation-light: this runs
// over every row of the tables (thread_state x sched).
std::vector<Interval> IntersectTwo(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  std::vector<const Interval*> open[2];
  size_t i = 0, j = 0;
  auto still_open = [](const Interval* x, int64_t at) { return x->instant ? x->ts == at : x->end > at; };
  while (i < a.size() || j < b.size()) {
    const bool from_a = j >= b.size() || (i < a.size() && a[i].ts <= b[j].ts);
    const Interval* x = from_a ? &a[i++] : &b[j++];
    std::vector<const Interval*>& others = open[from_a ? 1 : 0];
    others.erase(std::remove_if(others.begin(), others.end(), [&](const Interval* o) { return !still_open(o, x->ts); }),
                 others.end());
    for (const Interval* o : others) {
      const Interval& first = from_a ? *x : *o;
      const Interval& second = from_a ? *o : *x;
      Interval r;
      r.ts = std::max(first.ts, second.ts);
      r.end = std::max(r.ts, std::min(first.end, second.end));
      r.instant = first.instant || second.instant;
      r.ids = first.ids;
      r.ids.insert(r.ids.end(), second.ids.begin(), second.ids.end());
      out.push_back(std::move(r));
    }
    open[from_a ? 0 : 1].push_back(x);
  }
  std::sort(out.begin(), out.end(), [](const Interval& l, const Interval& r) { return l.ts < r.ts; });
  return out;
}

struct IntersectTable {
  sqlite3_vtab base;
  sqlite3* db;
  Shape shape;
};

struct IntersectCursor {
  sqlite3_vtab_cursor base;
  struct Row {
    Interval interval;
    size_t partition;
  };
  std::vector<Row> rows;
  std::vector<std::vector<sqlite3_value*>> partition_values;  // Per partition, the key's values.
  std::vector<sqlite3_value*> args;
  size_t row = 0;

  void Clear() {
    for (auto& values : partition_values)
      for (sqlite3_value* v : values) sqlite3_value_free(v);
    partition_values.clear();
    for (sqlite3_value* v : args) sqlite3_value_free(v);
    args.clear();
    rows.clear();
    row = 0;
  }
  ~IntersectCursor() { Clear(); }
};

int IntersectConnect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char**) {
  const Shape shape = *static_cast<const Shape*>(aux);
  std::string schema = "CREATE TABLE x(ts, dur";
  for (int i = 0; i < shape.tables; i++) schema += ", id_" + std::to_string(i);
  for (int i = 0; i < shape.partitions; i++) schema += ", p_" + std::to_string(i);
  for (int i = 0; i < shape.tables; i++) schema += ", t_" + std::to_string(i) + " HIDDEN";
  schema += ", partition_columns HIDDEN)";
  const int rc = sqlite3_declare_vtab(db, schema.c_str());
  if (rc != SQLITE_OK) return rc;
  auto* table = new IntersectTable{};
  table->db = db;
  table->shape = shape;
  *out = &table->base;
  return SQLITE_OK;
}

int IntersectDisconnect(sqlite3_vtab* vtab) {
  delete reinterpret_cast<IntersectTable*>(vtab);
  return SQLITE_OK;
}

int IntersectBestIndex(sqlite3_vtab* vtab, sqlite3_index_info* info) {
  const Shape& shape = reinterpret_cast<IntersectTable*>(vtab)->shape;
  const int first_hidden = 2 + shape.tables + shape.partitions;
  const int hidden = shape.tables + 1;
  for (int h = 0; h < hidden; h++) {
    bool found = false;
    for (int c = 0; c < info->nConstraint; c++) {
      const auto& k = info->aConstraint[c];
      if (k.iColumn == first_hidden + h && k.op == SQLITE_INDEX_CONSTRAINT_EQ && k.usable) {
        info->aConstraintUsage[c].argvIndex = h + 1;
        info->aConstraintUsage[c].omit = 1;
        found = true;
        break;
      }
    }
    if (!found) return SQLITE_CONSTRAINT;
  }
  info->estimatedCost = 1e6;
  return SQLITE_OK;
}

int IntersectOpen(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  *out = &(new IntersectCursor{})->base;
  return SQLITE_OK;
}

int IntersectClose(sqlite3_vtab_cursor* cursor) {
  delete reinterpret_cast<IntersectCursor*>(cursor);
  return SQLITE_OK;
}

int IntersectFail(sqlite3_vtab_cursor* cursor, const std::string& message) {
  sqlite3_free(cursor->pVtab->zErrMsg);
  cursor->pVtab->zErrMsg = sqlite3_mprintf("_interval_intersect!: %s", message.c_str());
  return SQLITE_ERROR;
}

int IntersectFilter(sqlite3_vtab_cursor* base, int, const char*, int argc, sqlite3_value** argv) {
  auto* c = reinterpret_cast<IntersectCursor*>(base);
  auto* table = reinterpret_cast<IntersectTable*>(base->pVtab);
  const Shape shape = table->shape;
  c->Clear();
  if (argc != shape.tables + 1) return IntersectFail(base, "wrong arguments");
  for (int i = 0; i < argc; i++) c->args.push_back(sqlite3_value_dup(argv[i]));
  const char* columns_text = reinterpret_cast<const char*>(sqlite3_value_text(argv[shape.tables]));
  const std::string columns = columns_text ? columns_text : "";
  // Per table: partition key -> its intervals, sorted by ts.
  std::map<std::string, size_t> partition_index;
  std::vector<std::vector<std::vector<Interval>>> by_table(static_cast<size_t>(shape.tables));
  for (int t = 0; t < shape.tables; t++) {
    const char* source = reinterpret_cast<const char*>(sqlite3_value_text(argv[t]));
    std::string sql = "SELECT id, ts, dur" + std::string(columns.empty() ? "" : ", " + columns) + " FROM " +
                      (source ? source : "") + " ORDER BY ts";
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(table->db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      const std::string message = sqlite3_errmsg(table->db);
      sqlite3_finalize(stmt);
      // The table is read in a statement of its own: the query's WITH
      // clauses are not visible there.
      const std::string hint = message.rfind("no such table", 0) == 0
                                   ? " (a name from the query's WITH clause cannot be used here: make it a "
                                     "PERFETTO TABLE or VIEW first)"
                                   : "";
      return IntersectFail(base, "table " + std::to_string(t) + ": " + message + hint);
    }
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      const int64_t ts = sqlite3_column_int64(stmt, 1), dur = sqlite3_column_int64(stmt, 2);
      if (dur < 0 || sqlite3_column_type(stmt, 2) == SQLITE_NULL) {
        sqlite3_finalize(stmt);
        return IntersectFail(base, "table " + std::to_string(t) + " has an interval with dur " +
                                       std::to_string(dur) + " at ts " + std::to_string(ts) +
                                       ": it works on intervals of non-negative duration (filter dur >= 0)");
      }
      const std::string key = KeyOf(stmt, 3, shape.partitions);
      auto [it, added] = partition_index.emplace(key, partition_index.size());
      if (added) {
        std::vector<sqlite3_value*> values;
        for (int p = 0; p < shape.partitions; p++) values.push_back(sqlite3_value_dup(sqlite3_column_value(stmt, 3 + p)));
        c->partition_values.push_back(std::move(values));
      }
      auto& partitions = by_table[static_cast<size_t>(t)];
      if (partitions.size() <= it->second) partitions.resize(it->second + 1);
      partitions[it->second].push_back(Interval{ts, ts + dur, dur == 0, {sqlite3_column_int64(stmt, 0)}});
    }
    const std::string message = rc == SQLITE_DONE ? "" : sqlite3_errmsg(table->db);
    sqlite3_finalize(stmt);
    if (!message.empty()) return IntersectFail(base, "table " + std::to_string(t) + ": " + message);
  }
  for (size_t p = 0; p < partition_index.size(); p++) {
    auto side = [&](int t) -> std::vector<Interval> {
      auto& partitions = by_table[static_cast<size_t>(t)];
      return p < partitions.size() ? partitions[p] : std::vector<Interval>();
    };
    std::vector<Interval> result = side(0);
    for (int t = 1; t < shape.tables && !result.empty(); t++) result = IntersectTwo(result, side(t));
    for (Interval& r : result) c->rows.push_back({std::move(r), p});
  }
  return SQLITE_OK;
}

int IntersectNext(sqlite3_vtab_cursor* base) {
  reinterpret_cast<IntersectCursor*>(base)->row++;
  return SQLITE_OK;
}

int IntersectEof(sqlite3_vtab_cursor* base) {
  auto* c = reinterpret_cast<IntersectCursor*>(base);
  return c->row >= c->rows.size();
}

int IntersectColumn(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int i) {
  auto* c = reinterpret_cast<IntersectCursor*>(base);
  const Shape& shape = reinterpret_cast<IntersectTable*>(base->pVtab)->shape;
  const auto& row = c->rows[c->row];
  if (i == 0) {
    sqlite3_result_int64(ctx, row.interval.ts);
  } else if (i == 1) {
    sqlite3_result_int64(ctx, row.interval.end - row.interval.ts);
  } else if (i < 2 + shape.tables) {
    sqlite3_result_int64(ctx, row.interval.ids[static_cast<size_t>(i - 2)]);
  } else if (i < 2 + shape.tables + shape.partitions) {
    sqlite3_result_value(ctx, c->partition_values[row.partition][static_cast<size_t>(i - 2 - shape.tables)]);
  } else {
    sqlite3_result_value(ctx, c->args[static_cast<size_t>(i - 2 - shape.tables - shape.partitions)]);
  }
  return SQLITE_OK;
}

int IntersectRowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) {
  *rowid = static_cast<sqlite3_int64>(reinterpret_cast<IntersectCursor*>(base)->row);
  return SQLITE_OK;
}

sqlite3_module MakeIntersectModule() {
  sqlite3_module m{};
  m.xConnect = IntersectConnect;
  m.xBestIndex = IntersectBestIndex;
  m.xDisconnect = IntersectDisconnect;
  m.xDestroy = IntersectDisconnect;
  m.xOpen = IntersectOpen;
  m.xClose = IntersectClose;
  m.xFilter = IntersectFilter;
  m.xNext = IntersectNext;
  m.xEof = IntersectEof;
  m.xColumn = IntersectColumn;
  m.xRowid = IntersectRowid;
  return m;
}

const sqlite3_module kIntersectModule = MakeIntersectModule();

std::string SqlString(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

// Expands to a call of the function for this shape, defining it on `db`
// first if `defined` (this engine's) does not have it yet.
bool IntervalIntersect(sqlite3* db, std::set<std::string>* defined, const std::vector<std::string>& args,
                       std::string* out, std::string* error) {
  std::vector<std::string> tables, partitions;
  if (!SplitList(args[0], &tables) || tables.size() < 2 || tables.size() > kMaxTables) {
    *error = "the first argument is a parenthesized list of 2 to 15 tables, (t0, t1, ...)";
    return false;
  }
  if (!SplitList(args[1], &partitions) || partitions.size() > 4) {
    *error = "the second argument is a parenthesized list of at most 4 partition columns, or ()";
    return false;
  }
  const std::string name =
      "__intrinsic_interval_intersect_" + std::to_string(tables.size()) + "_" + std::to_string(partitions.size());
  if (!defined->count(name)) {
    auto* shape = new Shape{static_cast<int>(tables.size()), static_cast<int>(partitions.size())};
    if (sqlite3_create_module_v2(db, name.c_str(), &kIntersectModule, shape,
                                 [](void* p) { delete static_cast<Shape*>(p); }) != SQLITE_OK) {
      *error = std::string("cannot define ") + name + ": " + sqlite3_errmsg(db);
      return false;
    }
    defined->insert(name);
  }
  std::string columns;
  for (const std::string& p : partitions) columns += (columns.empty() ? "" : ", ") + p;
  std::string sql = "(SELECT ts, dur";
  for (size_t i = 0; i < tables.size(); i++) sql += ", id_" + std::to_string(i);
  for (size_t i = 0; i < partitions.size(); i++) sql += ", p_" + std::to_string(i) + " AS " + partitions[i];
  sql += " FROM " + name + "(";
  for (const std::string& t : tables) sql += SqlString(t) + ", ";
  sql += SqlString(columns) + "))";
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

std::vector<PerfettoSqlMacro> IntervalIntersectMacros(sqlite3* db) {
  PerfettoSqlMacro multi;
  multi.name = "_interval_intersect";
  multi.args = {{"tabs", "_TableNameList"}, {"agg_columns", "ColumnNameList"}};
  multi.return_kind = "TableOrSubquery";
  auto defined = std::make_shared<std::set<std::string>>();
  multi.native = [db, defined](const std::vector<std::string>& args, std::string* out, std::string* error) {
    return IntervalIntersect(db, defined.get(), args, out, error);
  };
  PerfettoSqlMacro single;
  single.name = "_interval_intersect_single";
  single.args = {{"ts", "Expr"}, {"dur", "Expr"}, {"t", "TableOrSubquery"}};
  single.return_kind = "TableOrSubquery";
  single.native = IntervalIntersectSingle;
  return {multi, single};
}

}  // namespace sluice
