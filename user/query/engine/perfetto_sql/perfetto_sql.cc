#include "user/query/engine/perfetto_sql/perfetto_sql.h"

#include <sqlite3.h>

#include <algorithm>

#include "user/query/engine/operators/interval_intersect.h"
#include "user/query/engine/perfetto_sql/sql_tokenizer.h"
#include "user/query/engine/stdlib/stdlib_modules.h"

namespace sluice {
namespace {

std::string Lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::string Quoted(const std::string& name) {
  std::string q = "\"";
  for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// "SQL error at line 3 column 5: x" from a module's script becomes
// "in module a.b at line 3 column 5: x".
std::string InModule(const std::string& module, const std::string& message) {
  constexpr std::string_view kPrefix = "SQL error at ";
  if (message.rfind(kPrefix, 0) == 0) return "in module " + module + " at " + message.substr(kPrefix.size());
  return "in module " + module + ": " + message;
}

}  // namespace

PerfettoSql::PerfettoSql(sqlite3* db) : db_(db), functions_(db) {
  for (PerfettoSqlMacro& m : IntervalIntersectMacros(db)) macros_[Lower(m.name)] = std::move(m);
}
PerfettoSql::~PerfettoSql() = default;

size_t PerfettoSql::StatementEnd(std::string_view script, size_t offset) {
  return FindSqlStatementEnd(script, offset);
}

Status PerfettoSql::Exec(std::string_view script) {
  return RunSqlScript(db_, script, [](const SqlStatement& s) { return StepToEnd(s.stmt); }, 1, this);
}

Status PerfettoSql::IncludePrelude() {
  for (const StdlibModule& m : StdlibModules())
    if (m.name.rfind("prelude.", 0) == 0) SLUICE_RETURN_IF_ERROR(IncludeOne(m.name));
  return Status::Ok();
}

Status PerfettoSql::Handle(std::string_view statement, Outcome* outcome) {
  PerfettoSqlStatement st;
  PerfettoSqlParseError parse_error;
  if (!ParsePerfettoSqlStatement(statement, &st, &parse_error)) {
    outcome->error_offset = parse_error.offset;
    return Status::Error(parse_error.message);
  }
  const PerfettoSqlMacroLookup lookup = [this](const std::string& name) -> const PerfettoSqlMacro* {
    auto it = macros_.find(Lower(name));
    return it == macros_.end() ? nullptr : &it->second;
  };
  if (st.kind == PerfettoSqlStatementKind::kNone) {
    if (!HasPerfettoSqlMacroCall(statement)) return Status::Ok();  // Plain SQL: SQLite's.
    PerfettoSqlParseError error;
    if (!ExpandPerfettoSqlMacros(statement, lookup, &outcome->sql, &error)) {
      outcome->error_offset = error.offset;
      return Status::Error(error.message);
    }
    outcome->rewritten = true;
    return Status::Ok();
  }
  // A table's, view's or function's body may call macros; a macro's body is
  // expanded where the macro is called.
  if (st.kind != PerfettoSqlStatementKind::kCreateMacro && HasPerfettoSqlMacroCall(st.body)) {
    std::string expanded;
    PerfettoSqlParseError error;
    if (!ExpandPerfettoSqlMacros(st.body, lookup, &expanded, &error)) {
      outcome->error_offset = st.body_offset + error.offset;
      return Status::Error(error.message);
    }
    st.body = std::move(expanded);
  }
  outcome->ran = true;
  // Errors of the statement as a whole point at its body, or its start.
  outcome->error_offset = st.body_offset;
  switch (st.kind) {
    case PerfettoSqlStatementKind::kInclude:
      outcome->error_offset = 0;
      return Include(st.name);
    case PerfettoSqlStatementKind::kCreateTable:
    case PerfettoSqlStatementKind::kCreateView:
      return CreateTableOrView(st);
    case PerfettoSqlStatementKind::kCreateFunction:
      return functions_.Define(st);
    case PerfettoSqlStatementKind::kCreateMacro: {
      const std::string key = Lower(st.name);
      if (macros_.count(key) && !st.or_replace)
        return Status::Error("macro " + st.name + " already exists: use CREATE OR REPLACE PERFETTO MACRO");
      macros_[key] = PerfettoSqlMacro{st.name, st.columns, st.return_type, st.body, nullptr};
      return Status::Ok();
    }
    case PerfettoSqlStatementKind::kCreateIndex: {
      outcome->error_offset = 0;
      std::string columns;
      for (const PerfettoSqlArgument& c : st.columns) columns += (columns.empty() ? "" : ", ") + Quoted(c.name);
      if (st.or_replace) SLUICE_RETURN_IF_ERROR(ExecSql(db_, "DROP INDEX IF EXISTS " + Quoted(st.name)));
      return ExecSql(db_, "CREATE INDEX " + Quoted(st.name) + " ON " + Quoted(st.on_table) + "(" + columns + ")");
    }
    case PerfettoSqlStatementKind::kDropIndex:
      outcome->error_offset = 0;
      return ExecSql(db_, "DROP INDEX " + Quoted(st.name));
    case PerfettoSqlStatementKind::kNone:
      break;
  }
  return Status::Ok();
}

Status PerfettoSql::Include(const std::string& name) {
  if (name == "*" || (name.size() > 2 && name.compare(name.size() - 2, 2, ".*") == 0)) {
    const std::string prefix = name == "*" ? "" : name.substr(0, name.size() - 1);
    bool any = false;
    for (const StdlibModule& m : StdlibModules()) {
      if (std::string_view(m.name).substr(0, prefix.size()) != prefix) continue;
      any = true;
      SLUICE_RETURN_IF_ERROR(IncludeOne(std::string(m.name)));
    }
    if (!any) return Status::Error("no module matches " + name + " (sluice query --list-modules lists them)");
    return Status::Ok();
  }
  return IncludeOne(name);
}

Status PerfettoSql::IncludeOne(const std::string& name) {
  if (included_.count(name)) return Status::Ok();
  const StdlibModule* module = FindStdlibModule(name);
  if (!module) return Status::Error(WhyNoStdlibModule(name));
  if (std::find(including_.begin(), including_.end(), name) != including_.end())
    return Status::Error("module " + name + " includes itself (through " + including_.back() + ")");
  including_.push_back(name);
  Status ran = Exec(module->sql);
  including_.pop_back();
  if (!ran.ok()) return Status::Error(InModule(name, ran.message()));
  included_.insert(name);
  return Status::Ok();
}

// The declared columns must be exactly the SELECT's, in any order.
Status PerfettoSql::CheckDeclaredColumns(const PerfettoSqlStatement& st) {
  if (st.columns.empty()) return Status::Ok();
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, st.body.c_str(), static_cast<int>(st.body.size()), &s, nullptr) != SQLITE_OK) {
    Status error = Status::Error(sqlite3_errmsg(db_));
    sqlite3_finalize(s);
    return error;
  }
  std::set<std::string> selected;
  for (int i = 0; s && i < sqlite3_column_count(s); i++) selected.insert(Lower(sqlite3_column_name(s, i)));
  sqlite3_finalize(s);
  std::set<std::string> declared;
  for (const PerfettoSqlArgument& c : st.columns) declared.insert(Lower(c.name));
  const char* what = st.kind == PerfettoSqlStatementKind::kCreateTable ? "table " : "view ";
  for (const std::string& c : declared)
    if (!selected.count(c)) return Status::Error(what + st.name + ": column " + c + " is declared but not selected");
  for (const std::string& c : selected)
    if (!declared.count(c)) return Status::Error(what + st.name + ": column " + c + " is selected but not declared");
  return Status::Ok();
}

Status PerfettoSql::CreateTableOrView(const PerfettoSqlStatement& st) {
  SLUICE_RETURN_IF_ERROR(CheckDeclaredColumns(st));
  const bool table = st.kind == PerfettoSqlStatementKind::kCreateTable;
  const std::string kind = table ? "TABLE" : "VIEW";
  if (st.or_replace) SLUICE_RETURN_IF_ERROR(ExecSql(db_, "DROP " + kind + " IF EXISTS " + Quoted(st.name)));
  return ExecSql(db_, "CREATE " + kind + " " + Quoted(st.name) + " AS " + st.body);
}

}  // namespace sluice
