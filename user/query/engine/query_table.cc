#include "user/query/engine/query_table.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <string>

namespace sluice {
namespace {

// idxNum layout: bits 0-3 plan, bit 4 descending, bits 8+ column.
enum Plan : int { kScan = 0, kLookup = 1, kOrdered = 2, kRange = 3 };
// kRange's idxNum flags: which bounds argv holds (lower first), and which
// of them are strict (> or <).
constexpr int kRangeLower = 32, kRangeUpper = 64, kRangeLowerStrict = 128, kRangeUpperStrict = 256;

struct VTab : sqlite3_vtab {
  const QueryTable* table = nullptr;
  // Column -> row ids in that column's order, built on first use (see
  // OrderFor). Kept for the connection's life: the data never changes.
  std::map<int, std::vector<uint32_t>> order_by_column;
  // Integer columns whose values never decrease in row order (sched.ts,
  // thread_state.ts: rows are stored by time), found on first ask.
  std::map<int, bool> rows_ascend;
};

// A pushed-down `column = value` / `column IN (...)`: the keys (KeyAt's
// values) a row's column may have. Empty keys: no row matches.
struct KeyFilter {
  int column = 0;
  std::vector<int64_t> keys;
  // When the column is a plain uint32 array (KeyArray): a row matches when
  // allowed[array[row]] (keys below 2^16 only), without a call per row.
  const uint32_t* array = nullptr;
  std::vector<uint8_t> allowed;  // Bytes, not bits: read once per row.
};

struct Cursor : sqlite3_vtab_cursor {
  VTab* vtab = nullptr;
  std::vector<KeyFilter> filters;
  std::unique_ptr<QueryCursorState> state;
  int plan = kScan;
  bool descending = false;
  uint64_t pos = 0;                     // Index into the plan's row sequence.
  uint64_t end = 0;
  std::vector<uint64_t> lookup_rows;    // kLookup
  std::vector<uint32_t> matches;        // kOrdered with filters (SortedMatches)
  const std::vector<uint32_t>* order = nullptr;  // kOrdered: the permutation or `matches`

  // Per column, where the table stores it (QueryTable::Data), read at Open:
  // Column answers plain integer cells from here, without a virtual call.
  std::vector<ColumnData> data;

  bool Matches(uint64_t row) const {
    for (const KeyFilter& f : filters) {
      if (f.array) {
        uint32_t key = f.array[row];
        if (key >= f.allowed.size() || !f.allowed[key]) return false;
        continue;
      }
      int64_t key;
      if (!vtab->table->KeyAt(row, f.column, &key)) return false;
      if (std::find(f.keys.begin(), f.keys.end(), key) == f.keys.end()) return false;
    }
    return true;
  }
  // Moves pos forward to the next row that passes the filters.
  void SkipToMatch() {
    if (filters.empty()) return;
    while (pos < end && !Matches(Row())) ++pos;
  }

  uint64_t Row() const {
    switch (plan) {
      case kLookup: return lookup_rows[pos];
      case kOrdered: return (*order)[descending ? end - 1 - pos : pos];
      default: return pos;
    }
  }
};

const QueryTable* TableOf(sqlite3_vtab* vtab) { return static_cast<VTab*>(vtab)->table; }

// Row ids sorted by `column` (NULLs first, as SQLite orders them; equal keys
// in id order). Already sorted columns (ts on most tables) cost one pass;
// small key ranges (utid, cpu, interned names) a counting sort; the rest a
// stable sort.
const std::vector<uint32_t>& OrderFor(VTab* vtab, int column) {
  auto it = vtab->order_by_column.find(column);
  if (it != vtab->order_by_column.end()) return it->second;
  const QueryTable* table = vtab->table;
  constexpr int64_t kNull = std::numeric_limits<int64_t>::min();
  auto key_at = [table, column](uint64_t row) {
    int64_t key;
    return table->KeyAt(row, column, &key) ? key : kNull;
  };
  uint64_t n = table->row_count();
  std::vector<uint32_t>& order = vtab->order_by_column[column];
  order.resize(n);
  std::iota(order.begin(), order.end(), 0u);
  bool text = table->columns()[static_cast<size_t>(column)].type == ColumnType::kText;
  // Integer columns: one pass for the range and sortedness, then (the
  // common case: utid, cpu, small ranges) a counting sort that reads the
  // keys again instead of holding 8 bytes per row (thread_state has ~20 M).
  if (!text) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = kNull, previous = kNull;
    bool sorted = true;
    for (uint64_t row = 0; row < n; ++row) {
      int64_t key = key_at(row);
      sorted = sorted && key >= previous;
      previous = key;
      lo = std::min(lo, key);
      hi = std::max(hi, key);
    }
    if (sorted || n == 0) return order;
    if (lo != kNull && static_cast<uint64_t>(hi - lo) < 4 * n + 1024) {
      std::vector<uint32_t> counts(static_cast<size_t>(hi - lo) + 2, 0);
      for (uint64_t row = 0; row < n; ++row) ++counts[static_cast<size_t>(key_at(row) - lo) + 1];
      std::partial_sum(counts.begin(), counts.end(), counts.begin());
      for (uint64_t row = 0; row < n; ++row)
        order[counts[static_cast<size_t>(key_at(row) - lo)]++] = static_cast<uint32_t>(row);
      return order;
    }
  }
  std::vector<int64_t> keys(n);
  for (uint64_t row = 0; row < n; ++row) keys[row] = key_at(row);
  if (text) {
    // String ids are in interning order: replace each by its text's rank
    // (bytewise, as SQLite's BINARY collation orders text).
    std::vector<int64_t> ids;
    for (int64_t key : keys)
      if (key != kNull) ids.push_back(key);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::vector<int64_t> by_text = ids;
    std::sort(by_text.begin(), by_text.end(), [table, column](int64_t a, int64_t b) {
      return table->KeyText(column, a) < table->KeyText(column, b);
    });
    std::vector<int64_t> rank_of_id(ids.size());  // Indexed like `ids`.
    for (size_t r = 0; r < by_text.size(); ++r)
      rank_of_id[static_cast<size_t>(std::lower_bound(ids.begin(), ids.end(), by_text[r]) - ids.begin())] =
          static_cast<int64_t>(r);
    for (int64_t& key : keys)
      if (key != kNull) key = rank_of_id[static_cast<size_t>(std::lower_bound(ids.begin(), ids.end(), key) - ids.begin())];
  }
  std::stable_sort(order.begin(), order.end(), [&keys](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
  return order;
}

// Whether `column` (an integer one) never decreases from row to row, NULL
// (as the lowest value) included: then row order is that column's order.
bool RowsAscendBy(VTab* vtab, int column) {
  auto [it, inserted] = vtab->rows_ascend.try_emplace(column, false);
  if (!inserted) return it->second;
  const QueryTable* table = vtab->table;
  if (table->columns()[static_cast<size_t>(column)].type != ColumnType::kInt) return false;
  int64_t previous = std::numeric_limits<int64_t>::min();
  for (uint64_t row = 0; row < table->row_count(); ++row) {
    int64_t key;
    if (!table->KeyAt(row, column, &key)) key = std::numeric_limits<int64_t>::min();
    if (key < previous) return false;
    previous = key;
  }
  return it->second = true;
}

std::string SchemaOf(const QueryTable& table) {
  std::string sql = "CREATE TABLE x(";
  bool first = true;
  for (const QueryColumn& column : table.columns()) {
    if (!first) sql += ", ";
    first = false;
    sql += "\"" + column.name + "\" ";
    sql += column.type == ColumnType::kInt ? "INTEGER" : column.type == ColumnType::kReal ? "REAL" : "TEXT";
  }
  return sql + ")";
}

int Connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char** err) {
  auto* table = static_cast<const QueryTable*>(aux);
  int rc = sqlite3_declare_vtab(db, SchemaOf(*table).c_str());
  if (rc != SQLITE_OK) {
    *err = sqlite3_mprintf("sluice: cannot declare table %s", std::string(table->name()).c_str());
    return rc;
  }
  auto* vtab = new VTab();
  vtab->table = table;
  *out = vtab;
  return SQLITE_OK;
}

int Disconnect(sqlite3_vtab* vtab) {
  delete static_cast<VTab*>(vtab);
  return SQLITE_OK;
}

int BestIndex(sqlite3_vtab* vtab, sqlite3_index_info* info) {
  const QueryTable* table = TableOf(vtab);
  const auto& columns = table->columns();
  double rows = static_cast<double>(table->row_count());
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (!c.usable || c.op != SQLITE_INDEX_CONSTRAINT_EQ || c.iColumn < 0) continue;
    if (!columns[static_cast<size_t>(c.iColumn)].lookup) continue;
    info->aConstraintUsage[i].argvIndex = 1;
    info->aConstraintUsage[i].omit = 0;  // SQLite re-checks: cheap on few rows.
    info->idxNum = kLookup | (c.iColumn << 8);
    info->estimatedCost = 10;
    info->estimatedRows = 10;
    return SQLITE_OK;
  }
  info->idxNum = kScan;
  info->estimatedCost = rows + 1;
  info->estimatedRows = static_cast<sqlite3_int64>(rows) + 1;
  int argv_index = 0;
  // A range on the row-index column (id > x, id BETWEEN x AND y): only the
  // rows in it are read. One lower and one upper bound at most; SQLite
  // re-checks them (omit 0), so a rounded bound cannot let a row through.
  int lower = -1, upper = -1;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (!c.usable || c.iColumn < 0 || !columns[static_cast<size_t>(c.iColumn)].row_index) continue;
    if ((c.op == SQLITE_INDEX_CONSTRAINT_GT || c.op == SQLITE_INDEX_CONSTRAINT_GE) && lower < 0) lower = i;
    if ((c.op == SQLITE_INDEX_CONSTRAINT_LT || c.op == SQLITE_INDEX_CONSTRAINT_LE) && upper < 0) upper = i;
  }
  if (lower >= 0 || upper >= 0) {
    info->idxNum = kRange;
    for (int i : {lower, upper}) {
      if (i < 0) continue;
      info->aConstraintUsage[i].argvIndex = ++argv_index;
      info->aConstraintUsage[i].omit = 0;
      info->idxNum |= (i == lower ? kRangeLower : kRangeUpper) |
                      ((info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_GT ||
                        info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_LT)
                           ? (i == lower ? kRangeLowerStrict : kRangeUpperStrict)
                           : 0);
    }
    const double fraction = lower >= 0 && upper >= 0 ? 0.01 : 0.25;
    info->estimatedRows = std::max<sqlite3_int64>(1, static_cast<sqlite3_int64>(rows * fraction));
    info->estimatedCost = static_cast<double>(info->estimatedRows) + 1;
  }
  // Equality and IN on the other integer and text columns: the cursor
  // checks them (idxStr lists "column,in;" per argv value, in argv order).
  std::string filters;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (!c.usable || c.op != SQLITE_INDEX_CONSTRAINT_EQ || c.iColumn < 0) continue;
    ColumnType type = columns[static_cast<size_t>(c.iColumn)].type;
    if (type == ColumnType::kReal || !columns[static_cast<size_t>(c.iColumn)].filterable) continue;
    const char* collation = sqlite3_vtab_collation(info, i);
    if (type == ColumnType::kText && collation && sqlite3_stricmp(collation, "BINARY") != 0) continue;
    bool in = sqlite3_vtab_in(info, i, -1) != 0;
    if (in) sqlite3_vtab_in(info, i, 1);  // All IN values at once.
    info->aConstraintUsage[i].argvIndex = ++argv_index;
    info->aConstraintUsage[i].omit = 1;
    filters += std::to_string(c.iColumn) + (in ? ",1;" : ",0;");
    info->estimatedRows = std::max<sqlite3_int64>(1, info->estimatedRows / 10);
    info->estimatedCost = info->estimatedCost * 0.9;
  }
  if (!filters.empty()) {
    info->idxStr = sqlite3_mprintf("%s", filters.c_str());
    info->needToFreeIdxStr = 1;
  }
  if ((info->idxNum & 15) == kRange) {
    // Rows come in row order: an ORDER BY of the row index, ascending, is met.
    if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn >= 0 &&
        columns[static_cast<size_t>(info->aOrderBy[0].iColumn)].row_index && !info->aOrderBy[0].desc)
      info->orderByConsumed = 1;
    return SQLITE_OK;
  }
  // ORDER BY a, or ORDER BY a, b ascending where the rows already ascend
  // by b (cpu, ts on sched: SPAN_JOIN's read): the permutation by a is a
  // stable sort, so it keeps b's order within each value of a.
  const bool one_key = info->nOrderBy == 1 && info->aOrderBy[0].iColumn >= 0;
  const bool then_row_order = info->nOrderBy == 2 && info->aOrderBy[0].iColumn >= 0 &&
                              info->aOrderBy[1].iColumn >= 0 && !info->aOrderBy[0].desc &&
                              !info->aOrderBy[1].desc &&
                              RowsAscendBy(static_cast<VTab*>(vtab), info->aOrderBy[1].iColumn);
  if (one_key || then_row_order) {
    int column = info->aOrderBy[0].iColumn;
    ColumnType type = columns[static_cast<size_t>(column)].type;
    if ((type == ColumnType::kInt || type == ColumnType::kText) && columns[static_cast<size_t>(column)].ordered) {
      info->idxNum = kOrdered | (column << 8) | (info->aOrderBy[0].desc ? 16 : 0);
      info->orderByConsumed = 1;
    }
  }
  return SQLITE_OK;
}

int Open(sqlite3_vtab* vtab, sqlite3_vtab_cursor** out) {
  auto* cursor = new Cursor();
  cursor->vtab = static_cast<VTab*>(vtab);
  const QueryTable* table = cursor->vtab->table;
  cursor->state = table->NewCursorState();
  for (int c = 0; c < static_cast<int>(table->columns().size()); ++c) cursor->data.push_back(table->Data(c));
  *out = cursor;
  return SQLITE_OK;
}

int Close(sqlite3_vtab_cursor* cursor) {
  delete static_cast<Cursor*>(cursor);
  return SQLITE_OK;
}

// kOrdered with filters on an integer column: the matching rows, stably
// sorted by the column (NULLs first), walked in place of the permutation.
// Two passes in row order (sequential reads; the filters are cheap) and a
// counting sort into 4 bytes per match, for the usual small key ranges
// (utid, cpu); a stable sort of the matches otherwise.
void SortedMatches(Cursor* cursor, int column) {
  const QueryTable* table = cursor->vtab->table;
  constexpr int64_t kNull = std::numeric_limits<int64_t>::min();
  const uint32_t* key_array = table->KeyArray(column);  // utid, cpu: no call per key
  auto key_at = [table, column, key_array](uint64_t row) {
    if (key_array) return static_cast<int64_t>(key_array[row]);
    int64_t key;
    return table->KeyAt(row, column, &key) ? key : kNull;
  };
  uint64_t n = table->row_count();
  // One pass of the filters; the later passes read only the matches.
  std::vector<uint32_t> matched;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = kNull;
  for (uint64_t row = 0; row < n; ++row) {
    if (!cursor->Matches(row)) continue;
    matched.push_back(static_cast<uint32_t>(row));
    int64_t key = key_at(row);
    lo = std::min(lo, key);
    hi = std::max(hi, key);
  }
  std::vector<uint32_t>& rows = cursor->matches;
  uint64_t count = matched.size();
  if (count > 0 && lo != kNull && static_cast<uint64_t>(hi - lo) < 4 * count + 1024) {
    rows.assign(count, 0);
    std::vector<uint32_t> counts(static_cast<size_t>(hi - lo) + 2, 0);
    for (uint32_t row : matched) ++counts[static_cast<size_t>(key_at(row) - lo) + 1];
    std::partial_sum(counts.begin(), counts.end(), counts.begin());
    for (uint32_t row : matched) rows[counts[static_cast<size_t>(key_at(row) - lo)]++] = row;
  } else {
    std::vector<int64_t> keys(count);
    for (size_t k = 0; k < count; ++k) keys[k] = key_at(matched[k]);
    std::vector<uint32_t> index(count);
    std::iota(index.begin(), index.end(), 0u);
    std::stable_sort(index.begin(), index.end(), [&keys](uint32_t a, uint32_t b) { return keys[a] < keys[b]; });
    rows.resize(count);
    for (size_t k = 0; k < count; ++k) rows[k] = matched[index[k]];
  }
  cursor->filters.clear();  // Applied.
  cursor->order = &rows;
  cursor->end = rows.size();
}

// The key a constraint value stands for in `column`, as SQLite would
// compare it with the column's values (integer affinity: 5, 5.0 and '5'
// are 5; text: the value's text); false when no value of the column can
// equal it.
bool KeyOfValue(const QueryTable& table, int column, sqlite3_value* value, int64_t* key) {
  if (table.columns()[static_cast<size_t>(column)].type == ColumnType::kText) {
    if (sqlite3_value_type(value) == SQLITE_NULL) return false;
    const unsigned char* text = sqlite3_value_text(value);
    std::string_view view(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_value_bytes(value)));
    return text && table.FindTextKey(column, view, key);
  }
  switch (sqlite3_value_numeric_type(value)) {
    case SQLITE_INTEGER:
      *key = sqlite3_value_int64(value);
      return true;
    case SQLITE_FLOAT: {
      double d = sqlite3_value_double(value);
      if (d < -9.2e18 || d > 9.2e18 || d != static_cast<double>(static_cast<int64_t>(d))) return false;
      *key = static_cast<int64_t>(d);
      return true;
    }
    default:
      return false;  // NULL, or text that is not a number.
  }
}

// The filters idxStr describes, with their keys from argv (after the
// plan's own argv value, if it has one).
void ParseFilters(const QueryTable& table, const char* idx_str, int first_argv, int argc, sqlite3_value** argv,
                  std::vector<KeyFilter>* out) {
  out->clear();
  if (!idx_str) return;
  int a = first_argv;
  for (const char* p = idx_str; *p && a < argc; ++a) {
    KeyFilter f;
    f.column = atoi(p);
    p = strchr(p, ',') + 1;
    bool in = *p == '1';
    p = strchr(p, ';') + 1;
    int64_t key;
    if (in) {
      sqlite3_value* v = nullptr;
      for (int rc = sqlite3_vtab_in_first(argv[a], &v); rc == SQLITE_OK && v; rc = sqlite3_vtab_in_next(argv[a], &v))
        if (KeyOfValue(table, f.column, v, &key)) f.keys.push_back(key);
    } else if (KeyOfValue(table, f.column, argv[a], &key)) {
      f.keys.push_back(key);
    }
    f.array = table.KeyArray(f.column);
    for (int64_t k : f.keys) {
      if (k < 0 || k >= (1 << 16)) f.array = nullptr;  // Keep the table small.
    }
    if (f.array) {
      f.allowed.assign(f.keys.empty() ? 0 : static_cast<size_t>(*std::max_element(f.keys.begin(), f.keys.end())) + 1,
                       uint8_t{0});
      for (int64_t k : f.keys) f.allowed[static_cast<size_t>(k)] = 1;
    }
    out->push_back(std::move(f));
  }
}

int Filter(sqlite3_vtab_cursor* base, int idx_num, const char* idx_str, int argc, sqlite3_value** argv) {
  auto* cursor = static_cast<Cursor*>(base);
  const QueryTable* table = cursor->vtab->table;
  const int range_args = (idx_num & kRangeLower ? 1 : 0) + (idx_num & kRangeUpper ? 1 : 0);
  ParseFilters(*table, idx_str, (idx_num & 15) == kLookup ? 1 : (idx_num & 15) == kRange ? range_args : 0, argc,
               argv, &cursor->filters);
  cursor->plan = idx_num & 15;
  cursor->descending = (idx_num & 16) != 0;
  int column = idx_num >> 8;
  cursor->pos = 0;
  switch (cursor->plan) {
    case kLookup: {
      cursor->lookup_rows.clear();
      if (argc >= 1 && sqlite3_value_numeric_type(argv[0]) != SQLITE_NULL) {
        sqlite3_value* value = argv[0];
        bool integral = sqlite3_value_type(value) == SQLITE_INTEGER;
        if (!integral && sqlite3_value_type(value) == SQLITE_FLOAT) {
          double d = sqlite3_value_double(value);
          integral = d == static_cast<double>(static_cast<int64_t>(d));
        }
        if (integral) table->LookupRows(column, sqlite3_value_int64(value), &cursor->lookup_rows);
      }
      cursor->end = cursor->lookup_rows.size();
      break;
    }
    case kOrdered:
      if (!cursor->filters.empty() && table->columns()[static_cast<size_t>(column)].type == ColumnType::kInt) {
        // Filter first, in row order (sequential reads), then sort only the
        // matches: walking the whole table's permutation and checking each
        // row would read the filter column at random.
        SortedMatches(cursor, column);
        break;
      }
      cursor->order = &OrderFor(cursor->vtab, column);
      cursor->end = cursor->order->size();
      break;
    case kRange: {
      // [first, last) of the rows; an unusable bound (NULL, text) leaves
      // that side open: SQLite's own check decides.
      uint64_t first = 0, last = table->row_count();
      int a = 0;
      for (int bound : {kRangeLower, kRangeUpper}) {
        if (!(idx_num & bound) || a >= argc) continue;
        sqlite3_value* v = argv[a++];
        const int type = sqlite3_value_numeric_type(v);
        if (type == SQLITE_NULL) {
          first = last = 0;  // A comparison with NULL is never true.
          continue;
        }
        if (type != SQLITE_INTEGER && type != SQLITE_FLOAT) continue;
        const double d = sqlite3_value_double(v);
        const bool strict = idx_num & (bound == kRangeLower ? kRangeLowerStrict : kRangeUpperStrict);
        if (bound == kRangeLower) {
          const double lo = strict ? std::floor(d) + 1 : std::ceil(d);
          if (lo > 0) first = std::max(first, lo >= static_cast<double>(last) ? last : static_cast<uint64_t>(lo));
        } else {
          const double hi = strict ? std::ceil(d) - 1 : std::floor(d);  // inclusive
          if (hi < 0) last = 0;
          else if (hi + 1 < static_cast<double>(last)) last = static_cast<uint64_t>(hi) + 1;
        }
      }
      cursor->pos = first;
      cursor->end = std::max(first, last);
      break;
    }
    default:
      cursor->end = table->row_count();
  }
  cursor->SkipToMatch();
  return SQLITE_OK;
}

int Next(sqlite3_vtab_cursor* base) {
  auto* cursor = static_cast<Cursor*>(base);
  ++cursor->pos;
  cursor->SkipToMatch();
  return SQLITE_OK;
}

int Eof(sqlite3_vtab_cursor* base) {
  auto* cursor = static_cast<Cursor*>(base);
  return cursor->pos >= cursor->end;
}

// Hot path: one call per cell read. Plain integer arrays are answered here;
// the rest (text, NULL sentinels, derived columns) by the table.
int Column(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int column) {
  auto* cursor = static_cast<Cursor*>(base);
  uint64_t row = cursor->Row();
  const ColumnData& data = cursor->data[static_cast<size_t>(column)];
  if (!data.has_null) {
    switch (data.type) {
      case ColumnData::Type::kI64: {
        int64_t v = static_cast<const int64_t*>(data.data)[row];
        if (v == std::numeric_limits<int64_t>::min()) sqlite3_result_null(ctx);  // kNullInt
        else sqlite3_result_int64(ctx, v);
        return SQLITE_OK;
      }
      case ColumnData::Type::kU32:
        sqlite3_result_int64(ctx, static_cast<const uint32_t*>(data.data)[row]);
        return SQLITE_OK;
      case ColumnData::Type::kI32:
        sqlite3_result_int64(ctx, static_cast<const int32_t*>(data.data)[row]);
        return SQLITE_OK;
      default: break;
    }
  }
  cursor->vtab->table->Result(row, column, ctx, cursor->state.get());
  return SQLITE_OK;
}

int Rowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) {
  *rowid = static_cast<sqlite3_int64>(static_cast<Cursor*>(base)->Row());
  return SQLITE_OK;
}

const sqlite3_module kModule = {
    /*iVersion=*/0,
    /*xCreate=*/nullptr,  // eponymous-only: no CREATE VIRTUAL TABLE
    Connect, BestIndex, Disconnect,
    /*xDestroy=*/nullptr, Open, Close, Filter, Next, Eof, Column, Rowid,
    /*xUpdate=*/nullptr, /*xBegin=*/nullptr, /*xSync=*/nullptr, /*xCommit=*/nullptr,
    /*xRollback=*/nullptr, /*xFindFunction=*/nullptr, /*xRename=*/nullptr,
    /*xSavepoint=*/nullptr, /*xRelease=*/nullptr, /*xRollbackTo=*/nullptr,
    /*xShadowName=*/nullptr};

}  // namespace

Status RegisterQueryTable(sqlite3* db, const QueryTable* table) {
  std::string name(table->name());
  if (sqlite3_create_module_v2(db, name.c_str(), &kModule, const_cast<QueryTable*>(table),
                               nullptr) != SQLITE_OK)
    return Status::Error("sluice query: cannot register table " + name + ": " + sqlite3_errmsg(db));
  return Status::Ok();
}

}  // namespace sluice
