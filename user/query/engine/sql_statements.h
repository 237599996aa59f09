// SQL scripts: several statements separated by ';', with -- and /* */
// comments, run one at a time on a database, and errors that say where in
// the script they are ("SQL error at line 3 column 15: no such column: x").
//
// Statements are split by SQLite itself (sqlite3_prepare_v2 hands back the
// rest of the text), so a ';' inside a string, a comment or a trigger body is
// never taken for a separator. Each statement is prepared only after the one
// before it ran: a script may create a table and then read it.
//
// Where an error is: for a statement SQLite cannot prepare, the byte
// sqlite3_error_offset() names (a syntax error, an unknown column or
// function); when it names none (SQLite 3.40 names none for an unknown
// table), and for an error while the statement runs, the first character of
// the statement; for "incomplete input", the end of the script. Lines and
// columns count from 1; a column counts characters (UTF-8), not bytes; tabs
// count as one.
#ifndef SLUICE_USER_QUERY_ENGINE_SQL_STATEMENTS_H_
#define SLUICE_USER_QUERY_ENGINE_SQL_STATEMENTS_H_

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "shm/base/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace sluice {

struct SqlPosition {
  int line = 1;
  int column = 1;
};

// The line and column of byte `offset` of `text` (clamped to its end).
SqlPosition PositionAtOffset(std::string_view text, size_t offset);

// The first offset at or after `offset` that is not whitespace, a comment or
// a ';': where the next statement starts, or text.size() when none follows.
size_t SkipSqlSeparators(std::string_view text, size_t offset);

// A prepared statement of a script, handed to the caller to run.
struct SqlStatement {
  sqlite3_stmt* stmt = nullptr;
  size_t offset = 0;  // Of its first character in the script.
  bool last = false;  // Nothing but comments and separators follows it.
};

// Runs the statement: steps it to the end (printing rows, or not). Returns
// SQLite's message when a step fails.
using SqlStatementRunner = std::function<Status(const SqlStatement&)>;

// A language on top of SQLite's SQL (PerfettoSQL: perfetto_sql/perfetto_sql.h)
// sees each statement of a script first: it runs the statements that are
// its own, rewrites those that need it (macro calls), and leaves the rest,
// untouched, to SQLite.
class SqlDialect {
 public:
  struct Outcome {
    bool ran = false;        // The dialect ran the statement itself.
    bool rewritten = false;  // SQLite is to prepare `sql` instead of the statement.
    std::string sql;
    size_t error_offset = 0;  // In the statement, when Handle() fails.
  };
  virtual ~SqlDialect() = default;
  // Where the statement that starts at `offset` of `script` ends.
  virtual size_t StatementEnd(std::string_view script, size_t offset) = 0;
  virtual Status Handle(std::string_view statement, Outcome* outcome) = 0;
};

// Prepares and runs each statement of `script` in order on `db`, stopping at
// the first error: "SQL error at line L column C: <SQLite's message>". Lines
// are counted from `first_line` (the shell passes the input line where an
// entry began). With a `dialect`, each statement goes through it first; an
// error in a rewritten statement is placed at the statement's start.
Status RunSqlScript(sqlite3* db, std::string_view script, const SqlStatementRunner& run,
                    int first_line = 1, SqlDialect* dialect = nullptr);

// Steps `stmt` to the end, discarding rows; SQLite's message on failure.
Status StepToEnd(sqlite3_stmt* stmt);

// Runs SQL without results (sqlite3_exec); SQLite's message on failure.
Status ExecSql(sqlite3* db, const std::string& sql);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_SQL_STATEMENTS_H_
