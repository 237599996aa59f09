// The interactive side of `sluice query`: reads SQL statements (one or
// several lines, complete at a ';' outside strings and comments) and
// dot-commands from a LineReader, runs each on the database and prints every
// result; an error prints its one line and the shell goes on.
//
//   .tables            the tables and views: the engine's, then any the
//                      session created
//   .schema [TABLE]    the columns and types of TABLE (a table or view), in
//                      the current format; without TABLE, one line per table
//   .format [FORMAT]   table, csv, tsv or json; without FORMAT, the current one
//   .help              this list
//   .quit, .exit       leave (so does the end of input: Ctrl-D)
//
// A dot-command is recognised only at the start of an entry, as in sqlite3.
// At the end of the input an unfinished statement (no ';') still runs, so
// `echo 'select 1' | sluice query TRACE` prints 1.
//
// Positions in errors: over a pipe or file, the line in the whole input (as
// for -f); on a terminal, the line within the entry just typed. On a terminal
// Ctrl-C interrupts the running statement (sqlite3_interrupt) and the shell
// goes on.
#ifndef SLUICE_USER_CMD_QUERY_SHELL_H_
#define SLUICE_USER_CMD_QUERY_SHELL_H_

#include <cstdio>
#include <string>
#include <vector>

#include "user/cmd/line_reader.h"
#include "user/query/engine/query_output.h"

struct sqlite3;

namespace sluice {

class SqlDialect;

class QueryShell {
 public:
  // `engine_tables`: what .tables lists first (QueryEngine::TableNames()).
  // Results go to `out`, errors (one line each, prefixed "sluice query: ")
  // to `err`.
  // `dialect`: PerfettoSQL (QueryEngine::dialect()), or null for plain SQL.
  QueryShell(sqlite3* db, std::vector<std::string> engine_tables, OutputFormat format, FILE* out,
             FILE* err, SqlDialect* dialect = nullptr);

  // Reads and runs entries until the end of the input or .quit. Returns 0,
  // or 1 when any entry failed (for scripts that pipe statements in).
  int Run(LineReader& reader);

 private:
  // false for .quit/.exit.
  bool RunDotCommand(const std::string& line);
  void RunSql(const std::string& sql, int first_line, bool interactive);
  void ShowSchema(const std::string& table);
  void ShowAllSchemas();
  std::vector<std::string> AllTables();
  void Error(const std::string& message);

  sqlite3* db_;
  SqlDialect* dialect_;
  std::vector<std::string> engine_tables_;
  OutputFormat format_;
  FILE* out_;
  FILE* err_;
  bool failed_ = false;
};

}  // namespace sluice

#endif  // SLUICE_USER_CMD_QUERY_SHELL_H_
