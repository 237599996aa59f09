// QueryTable: one table of the imported trace as SQLite sees it, and the
// SQLite virtual table module that serves any QueryTable.
//
// Why virtual tables: copying a sched trace of 12 M events into SQLite's own
// b-trees through INSERTs costs tens of seconds and doubles the memory; the
// columns already sit in TraceStorage, so SQLite reads them in place (this is
// what Perfetto's trace processor does too). docs/QUERY.md has the
// measurements.
//
// What the module tells SQLite's planner (xBestIndex):
//   - `col = value` on a lookup column (ids, utid on thread, arg_set_id on
//     args): the matching rows only, at the cost of a hash or index step;
//   - ORDER BY / GROUP BY on one column: rows in that column's order from a
//     permutation sorted once per column and kept (a stable sort: equal keys
//     keep id order; text in bytewise order, as SQLite's default BINARY
//     collation), so `group by utid` over millions of rows streams instead
//     of feeding SQLite's sorter;
//   - `col = value` and `col IN (...)` on any other integer or text column
//     (BINARY collation): checked by the cursor on KeyAt's integer keys, so
//     SQLite neither reads nor compares the column for rows that fail;
//   - everything else: a full scan, SQLite filtering the rows.
#ifndef SLUICE_USER_QUERY_ENGINE_QUERY_TABLE_H_
#define SLUICE_USER_QUERY_ENGINE_QUERY_TABLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shm/base/status.h"

struct sqlite3;
struct sqlite3_context;

namespace sluice {

enum class ColumnType { kInt, kReal, kText };

struct QueryColumn {
  std::string name;
  ColumnType type;
  // `column = value` can be answered by LookupRows instead of a scan.
  bool lookup = false;
  // ORDER BY / GROUP BY on it can use KeyAt's order (false: SQLite sorts).
  bool ordered = true;
  // `column = value` can be checked with KeyAt and FindTextKey (false:
  // SQLite compares the values itself).
  bool filterable = true;
  // Its value is the row index (the id column): `column > x`, `<`, BETWEEN
  // read only the rows in range.
  bool row_index = false;
};

// A column stored as a plain array of integers (or string ids).
struct ColumnData {
  enum class Type : uint8_t { kNone, kI64, kU32, kI32, kI8, kStringId } type = Type::kNone;
  const void* data = nullptr;
  // Some value of the array stands for NULL: only Result knows which.
  // (kI64 columns also take kNullInt as NULL whatever this says.)
  bool has_null = false;
};

// State a table keeps per SQLite cursor (args caches the decoded arg set).
struct QueryCursorState {
  virtual ~QueryCursorState() = default;
};

class QueryTable {
 public:
  virtual ~QueryTable() = default;
  virtual std::string_view name() const = 0;
  virtual const std::vector<QueryColumn>& columns() const = 0;
  virtual uint64_t row_count() const = 0;
  virtual std::unique_ptr<QueryCursorState> NewCursorState() const { return nullptr; }
  // Sets the value of (row, column) as the SQL result on `ctx`
  // (sqlite3_result_*), NULL for the column's null sentinel.
  virtual void Result(uint64_t row, int column, sqlite3_context* ctx,
                      QueryCursorState* state) const = 0;
  // The column's value as an integer key: the value itself for integer
  // columns, the interned string id for text columns (see KeyText). False
  // for NULL.
  virtual bool KeyAt(uint64_t row, int column, int64_t* key) const = 0;
  // The text of a text column's key (a string id from KeyAt): the module
  // orders text columns by it (SQLite's BINARY collation: bytewise).
  virtual std::string_view KeyText(int column, int64_t key) const {
    (void)column, (void)key;
    return {};
  }
  // The column's keys as a plain array when it is one (a text column's
  // string ids, or an unsigned 32-bit column without a NULL sentinel), so a
  // filter can test rows without a call per row; nullptr otherwise.
  virtual const uint32_t* KeyArray(int column) const {
    (void)column;
    return nullptr;
  }
  // Where the column's values are stored when it is a plain array, so the
  // cursor can read cells without a call per cell; type kNone for derived
  // columns.
  virtual ColumnData Data(int column) const {
    (void)column;
    return {};
  }
  // The key of text `text` in a text column (KeyAt's value for it); false
  // when no row can have it.
  virtual bool FindTextKey(int column, std::string_view text, int64_t* key) const {
    (void)column, (void)text, (void)key;
    return false;
  }
  // For lookup columns: the ids of the rows where column == value, ascending.
  virtual void LookupRows(int column, int64_t value, std::vector<uint64_t>* rows) const {
    (void)column, (void)value, (void)rows;
  }
};

// Registers `table` as an eponymous virtual table named table->name() in
// `db` (usable as `select * from NAME` with no CREATE statement). The table
// must outlive the database connection.
Status RegisterQueryTable(sqlite3* db, const QueryTable* table);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_QUERY_TABLE_H_
