// libFuzzer target: PerfettoSQL statements as `sluice query` runs them, on
// arbitrary text: the tokenizer, the statement parser and the macro
// expander first (pure), then the whole script through QueryEngine's
// dialect over a tiny trace (INCLUDE, CREATE PERFETTO ..., macro calls,
// SQL-defined functions, the helper functions). Nothing may crash, hang or
// leak: errors are one line. SQLite's own work is bounded by a progress
// handler, so a recursive CTE without end stops.
//
//   make fuzz    (or: build/fuzz/perfetto_sql_fuzzer -max_total_time=60)
// Seeds: tests/fuzz/corpus/perfetto_sql_fuzzer/ (statements of each kind).
#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "tests/fuzz/tiny_trace.h"
#include "user/query/engine/perfetto_sql/macro_expander.h"
#include "user/query/engine/perfetto_sql/perfetto_sql_statement.h"
#include "user/query/engine/perfetto_sql/sql_tokenizer.h"
#include "user/query/engine/query_engine.h"
#include "user/query/engine/sql_statements.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  size_t offset = 0;
  while (offset < text.size()) {
    const size_t end = sluice::FindSqlStatementEnd(text, offset);
    if (end <= offset) break;
    sluice::PerfettoSqlStatement statement;
    sluice::PerfettoSqlParseError error;
    sluice::ParsePerfettoSqlStatement(text.substr(offset, end - offset), &statement, &error);
    sluice::PerfettoSqlMacro macro{"m", {{"x", "Expr"}}, "Expr", "($x + m!($x))", nullptr};
    std::string expanded;
    sluice::ExpandPerfettoSqlMacros(
        text.substr(offset, end - offset),
        [&](const std::string& name) { return name == "m" ? &macro : nullptr; }, &expanded, &error);
    offset = end;
  }
  static const std::string trace = sluice::fuzzing::TinyTrace();
  auto engine = sluice::QueryEngine::OpenBytes(trace);
  if (!engine.ok()) return 0;
  sqlite3* db = (*engine)->db();
  int steps = 0;
  sqlite3_progress_handler(db, 1000, [](void* n) { return ++*static_cast<int*>(n) > 2000 ? 1 : 0; }, &steps);
  (void)sluice::RunSqlScript(
      db, text, [](const sluice::SqlStatement& s) { return sluice::StepToEnd(s.stmt); }, 1, (*engine)->dialect());
  return 0;
}
