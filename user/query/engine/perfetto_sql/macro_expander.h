// PerfettoSQL macros: `CREATE PERFETTO MACRO name(arg Kind, ...) RETURNS
// Kind AS <tokens>` defines one; `name!(a, b)` anywhere in a statement is
// replaced, before SQLite sees it, by the body with each `$arg` replaced by
// the text of that argument. Bodies may call macros, arguments may too;
// expansion goes on to a depth of 32 (a macro that calls itself without end
// is an error, not a hang). Argument kinds (Expr, TableOrSubquery,
// ColumnName, ColumnNameList, ...) are not checked: SQLite reports what
// does not fit where it lands, as upstream does at prepare time.
#ifndef SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_MACRO_EXPANDER_H_
#define SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_MACRO_EXPANDER_H_

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "user/query/engine/perfetto_sql/perfetto_sql_statement.h"

namespace sluice {

struct PerfettoSqlMacro {
  std::string name;
  std::vector<PerfettoSqlArgument> args;
  std::string return_kind;
  std::string body;
  // A macro written in C++ (interval_intersect.h): given the arguments'
  // texts, writes the expansion, or false with a message. Used instead of
  // `body` when set.
  std::function<bool(const std::vector<std::string>& args, std::string* out, std::string* error)> native;
};

// Finds a macro by name (case-insensitive names are the caller's business);
// null if there is none.
using PerfettoSqlMacroLookup = std::function<const PerfettoSqlMacro*(const std::string& name)>;

// Whether `text` calls a macro (an identifier, '!', '(').
bool HasPerfettoSqlMacroCall(std::string_view text);

// `text` with every macro call expanded. False with `error` (its offset in
// `text`: the outermost call that failed) on an unknown macro, a wrong
// argument count, an unclosed call or too deep a recursion.
bool ExpandPerfettoSqlMacros(std::string_view text, const PerfettoSqlMacroLookup& lookup, std::string* out,
                             PerfettoSqlParseError* error);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_MACRO_EXPANDER_H_
