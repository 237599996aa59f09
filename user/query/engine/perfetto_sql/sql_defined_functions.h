// Functions written in SQL with CREATE PERFETTO FUNCTION, made callable
// from SQLite:
//
//   scalar  f(a INT, b STRING) RETURNS INT AS SELECT ...
//           an SQLite function of that many arguments; each call binds the
//           arguments to the body's $a and $b, steps it once and returns the
//           first column of the first row (NULL without a row);
//   table   f(a INT) RETURNS TABLE(x INT, y STRING) AS SELECT ...
//           an eponymous SQLite virtual table (a table-valued function, as
//           `SELECT * FROM f(1)` or `JOIN f(s.id)` call it) whose columns are
//           x and y, and whose arguments are hidden columns (_fn_arg0, ...)
//           that must be given; each call runs the body with them bound and
//           serves its rows.
//
// The body is prepared when the function is defined, so an error in it is
// reported there, not at the first call. A call that runs while the same
// function's statement is stepping (recursion) prepares another statement;
// calls nest at most 64 deep, so one that calls itself without end is an
// error rather than a stack overflow.
// Redefining (OR REPLACE) a function swaps its body in place: SQLite keeps
// calling the same entry point, which reads the current definition.
#ifndef SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_SQL_DEFINED_FUNCTIONS_H_
#define SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_SQL_DEFINED_FUNCTIONS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "shm/base/status.h"
#include "user/query/engine/perfetto_sql/perfetto_sql_statement.h"

struct sqlite3;

namespace sluice {

class SqlDefinedFunctions {
 public:
  explicit SqlDefinedFunctions(sqlite3* db);
  ~SqlDefinedFunctions();
  SqlDefinedFunctions(const SqlDefinedFunctions&) = delete;
  SqlDefinedFunctions& operator=(const SqlDefinedFunctions&) = delete;

  // Defines (or, with or_replace, redefines) the function of a parsed
  // CREATE PERFETTO FUNCTION. An error names what is wrong: a name taken by
  // a function of another kind or arity without OR REPLACE, a body SQLite
  // cannot prepare, a table function body whose columns differ from the
  // declared ones.
  Status Define(const PerfettoSqlStatement& statement);

  struct Definition;

 private:
  sqlite3* db_;
  int running_ = 0;  // Calls in progress, across all functions: bounds their nesting.
  std::map<std::string, std::unique_ptr<Definition>> by_key_;  // "name/arity" (lower case), and "name" for tables.
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_SQL_DEFINED_FUNCTIONS_H_
