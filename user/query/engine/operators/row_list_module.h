// RowListModule: the sqlite3_module of an eponymous table-valued function
// whose cursor is a list of rows its Filter computes at once
// (__intrinsic_slice_descendants, the flow operators). The module's own
// parts are Connect (the vtab and its columns), BestIndex, Filter and
// Column; opening, stepping and closing the list are the same for each and
// live here. `Cursor` derives from sqlite3_vtab_cursor, with `rows` (any
// vector) and `pos`; `VTab` derives from sqlite3_vtab.
#ifndef SLUICE_USER_QUERY_ENGINE_OPERATORS_ROW_LIST_MODULE_H_
#define SLUICE_USER_QUERY_ENGINE_OPERATORS_ROW_LIST_MODULE_H_

#include <sqlite3.h>

#include <initializer_list>

namespace sluice {

// The xBestIndex of a table-valued function whose arguments are the hidden
// columns `arguments` (in argument order): a plan that gives all of them by
// equality gets idxNum 1 and them as argv[0..]; a plan that cannot give
// one yet is refused (SQLITE_CONSTRAINT: wait for one that can); without
// them the function has no rows (idxNum 0, at a prohibitive cost).
inline int BindArguments(sqlite3_index_info* info, std::initializer_list<int> arguments) {
  int argv_index = 0;
  for (int column : arguments) {
    int found = -1;
    for (int i = 0; i < info->nConstraint; ++i) {
      const auto& c = info->aConstraint[i];
      if (c.iColumn != column || c.op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
      if (!c.usable) return SQLITE_CONSTRAINT;
      found = i;
      break;
    }
    if (found < 0) {
      info->idxNum = 0;
      info->estimatedCost = 1e12;
      return SQLITE_OK;
    }
    info->aConstraintUsage[found].argvIndex = ++argv_index;
    info->aConstraintUsage[found].omit = 1;
  }
  info->idxNum = 1;
  info->estimatedCost = 10;
  info->estimatedRows = 10;
  return SQLITE_OK;
}

template <typename VTab, typename Cursor>
sqlite3_module RowListModule(decltype(sqlite3_module::xConnect) connect,
                             decltype(sqlite3_module::xBestIndex) best_index,
                             decltype(sqlite3_module::xFilter) filter, decltype(sqlite3_module::xColumn) column) {
  sqlite3_module m{};
  // Eponymous (no xCreate): usable as name(arg) without CREATE VIRTUAL TABLE.
  m.xConnect = connect;
  m.xBestIndex = best_index;
  m.xFilter = filter;
  m.xColumn = column;
  m.xDisconnect = [](sqlite3_vtab* vtab) {
    delete static_cast<VTab*>(vtab);
    return SQLITE_OK;
  };
  m.xOpen = [](sqlite3_vtab*, sqlite3_vtab_cursor** out) {
    *out = new Cursor();
    return SQLITE_OK;
  };
  m.xClose = [](sqlite3_vtab_cursor* cursor) {
    delete static_cast<Cursor*>(cursor);
    return SQLITE_OK;
  };
  m.xNext = [](sqlite3_vtab_cursor* cursor) {
    static_cast<Cursor*>(cursor)->pos++;
    return SQLITE_OK;
  };
  m.xEof = [](sqlite3_vtab_cursor* base) {
    auto* cursor = static_cast<Cursor*>(base);
    return cursor->pos >= cursor->rows.size() ? 1 : 0;
  };
  m.xRowid = [](sqlite3_vtab_cursor* cursor, sqlite3_int64* rowid) {
    *rowid = static_cast<sqlite3_int64>(static_cast<Cursor*>(cursor)->pos);
    return SQLITE_OK;
  };
  return m;
}

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_OPERATORS_ROW_LIST_MODULE_H_
