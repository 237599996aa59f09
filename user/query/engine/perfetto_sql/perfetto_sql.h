// PerfettoSql: the Trace Processor's language on top of SQLite, so that
// queries and notebooks written for Perfetto run unchanged
// (docs/QUERY.md, "PerfettoSQL").
//
// It is an SqlDialect (sql_statements.h): every script run through
// RunSqlScript(..., dialect) passes each statement here first.
//   - INCLUDE PERFETTO MODULE runs a standard-library module (compiled in,
//     stdlib_modules.h) once per session, and the modules it includes;
//     `a.b.*` includes every module under a.b. A module written for Android
//     or Chrome data is refused in one line naming it.
//   - CREATE PERFETTO TABLE materializes its SELECT into an SQLite table;
//     VIEW makes an SQLite view; both check a declared column list against
//     the SELECT's columns. INDEX / DROP PERFETTO INDEX index such a table.
//   - CREATE PERFETTO FUNCTION: sql_defined_functions.h.
//   - CREATE PERFETTO MACRO and `name!(...)` calls: macro_expander.h.
// Errors inside a module name the module, and the line and column in it.
#ifndef SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_PERFETTO_SQL_H_
#define SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_PERFETTO_SQL_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "shm/base/status.h"
#include "user/query/engine/perfetto_sql/macro_expander.h"
#include "user/query/engine/perfetto_sql/sql_defined_functions.h"
#include "user/query/engine/sql_statements.h"

struct sqlite3;

namespace sluice {

class PerfettoSql : public SqlDialect {
 public:
  explicit PerfettoSql(sqlite3* db);
  ~PerfettoSql() override;

  size_t StatementEnd(std::string_view script, size_t offset) override;
  Status Handle(std::string_view statement, Outcome* outcome) override;

  // Runs `script` (statements only, no results kept) through this dialect.
  Status Exec(std::string_view script);
  // Includes every prelude.* module: what upstream offers without INCLUDE.
  Status IncludePrelude();

 private:
  Status Include(const std::string& name);
  Status IncludeOne(const std::string& name);
  Status CreateTableOrView(const PerfettoSqlStatement& st);
  Status CheckDeclaredColumns(const PerfettoSqlStatement& st);

  sqlite3* db_;
  std::set<std::string> included_;
  std::vector<std::string> including_;  // The include stack: a cycle is an error.
  std::map<std::string, PerfettoSqlMacro> macros_;  // By lower-case name.
  SqlDefinedFunctions functions_;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_PERFETTO_SQL_H_
