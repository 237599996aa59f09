// PerfettoSQL's own statements, recognised in one statement's text before
// SQLite sees it (docs/QUERY.md, "PerfettoSQL"):
//
//   INCLUDE PERFETTO MODULE a.b.c;                 (or a.b.*, or *)
//   CREATE [OR REPLACE] PERFETTO TABLE name [(col TYPE, ...)] AS <select>;
//   CREATE [OR REPLACE] PERFETTO VIEW  name [(col TYPE, ...)] AS <select>;
//   CREATE [OR REPLACE] PERFETTO FUNCTION name(arg TYPE, ...)
//       RETURNS TYPE AS <select>;                  (scalar: first column of the first row)
//       RETURNS TABLE(col TYPE, ...) AS <select>;  (table-valued)
//   CREATE [OR REPLACE] PERFETTO MACRO name(arg Kind, ...) RETURNS Kind AS <tokens>;
//   CREATE [OR REPLACE] PERFETTO INDEX name ON table(col, ...);
//   DROP PERFETTO INDEX name ON table;
//
// Anything else is plain SQL (kNone), left to SQLite. A statement that
// starts like one of these but is malformed is an error naming the offset
// in the statement where it went wrong, which the caller turns into a line
// and a column. Types are checked against upstream's list (LONG, INT, UINT,
// BOOL, DOUBLE, FLOAT, STRING, BYTES, PROTO, TIMESTAMP, DURATION, ID,
// ID(t.c), JOINID(t.c), ARGSETID, ANY for arguments); macro kinds are kept
// as written (Expr, TableOrSubquery, ColumnName, ...).
//
// Pure (text in, struct out) so tests and the fuzz target
// (tests/fuzz/perfetto_sql_fuzzer.cc) can feed it anything.
#ifndef SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_PERFETTO_SQL_STATEMENT_H_
#define SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_PERFETTO_SQL_STATEMENT_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

enum class PerfettoSqlStatementKind {
  kNone,  // Plain SQL.
  kInclude,
  kCreateTable,
  kCreateView,
  kCreateFunction,
  kCreateMacro,
  kCreateIndex,
  kDropIndex,
};

struct PerfettoSqlArgument {
  std::string name;
  std::string type;  // As written, upper-cased for types ("INT", "ID(slice.id)"), as written for macro kinds.
};

struct PerfettoSqlStatement {
  PerfettoSqlStatementKind kind = PerfettoSqlStatementKind::kNone;
  bool or_replace = false;
  std::string name;  // Module (a.b.c, a.b.*), table, view, function, macro or index name.
  // Table/view: the declared columns (may be empty). Function/macro: the
  // arguments. Index: the indexed columns (type empty).
  std::vector<PerfettoSqlArgument> columns;
  // Function: the return type ("INT", ...), or "TABLE" with `returns`
  // holding the returned columns. Macro: the returned kind.
  std::string return_type;
  std::vector<PerfettoSqlArgument> returns;
  std::string on_table;     // Index: the table it is on.
  std::string body;         // After AS: the select, or the macro's tokens (no trailing ';').
  size_t body_offset = 0;   // Of `body` in the statement.
};

struct PerfettoSqlParseError {
  size_t offset = 0;  // In the statement.
  std::string message;
};

// Parses one statement (as FindSqlStatementEnd delimits it). Returns false
// with `error` set when it starts as a PerfettoSQL statement but is not one.
bool ParsePerfettoSqlStatement(std::string_view statement, PerfettoSqlStatement* out,
                               PerfettoSqlParseError* error);

// Whether `type` (upper case) is a PerfettoSQL type; ANY only where
// `argument`.
bool IsPerfettoSqlType(std::string_view type, bool argument);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_PERFETTO_SQL_STATEMENT_H_
