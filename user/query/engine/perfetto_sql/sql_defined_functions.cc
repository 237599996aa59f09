#include "user/query/engine/perfetto_sql/sql_defined_functions.h"

#include <sqlite3.h>

#include <algorithm>

namespace sluice {
namespace {

constexpr int kMaxRecursion = 64;

std::string Lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

}  // namespace

struct SqlDefinedFunctions::Definition {
  sqlite3* db = nullptr;
  PerfettoSqlStatement statement;
  // For a table function: where each declared column is in the body's result.
  std::vector<int> body_column;
  // Statements not stepping now, ready for the next call.
  std::vector<sqlite3_stmt*> idle;
  // Calls of SQL-defined functions running now, shared by all of them (more
  // than one: they nest, or recurse).
  int* running = nullptr;

  ~Definition() { Clear(); }
  void Clear() {
    for (sqlite3_stmt* s : idle) sqlite3_finalize(s);
    idle.clear();
  }
  const std::string& name() const { return statement.name; }
  size_t arity() const { return statement.columns.size(); }

  sqlite3_stmt* Acquire(std::string* error) {
    // A function that calls itself without end would exhaust the stack
    // before SQLite's own limits stop it.
    if (*running >= kMaxRecursion) {
      *error = "function " + name() + ": SQL-defined functions nest more than " + std::to_string(kMaxRecursion) +
               " calls deep (does it call itself without end?)";
      return nullptr;
    }
    ++*running;
    if (!idle.empty()) {
      sqlite3_stmt* s = idle.back();
      idle.pop_back();
      return s;
    }
    sqlite3_stmt* s = nullptr;
    const int rc =
        sqlite3_prepare_v2(db, statement.body.c_str(), static_cast<int>(statement.body.size()), &s, nullptr);
    if (rc != SQLITE_OK || s == nullptr) {
      *error = "function " + name() + ": " + (rc != SQLITE_OK ? sqlite3_errmsg(db) : std::string("its body is empty"));
      sqlite3_finalize(s);
      --*running;
      return nullptr;
    }
    return s;
  }
  void Release(sqlite3_stmt* s) {
    --*running;
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    idle.push_back(s);
  }
  void Bind(sqlite3_stmt* s, int argc, sqlite3_value** argv) const {
    for (int i = 0; i < argc && static_cast<size_t>(i) < arity(); i++) {
      const int at = sqlite3_bind_parameter_index(s, ("$" + statement.columns[static_cast<size_t>(i)].name).c_str());
      if (at > 0) sqlite3_bind_value(s, at, argv[i]);
    }
  }
};

namespace {

using Definition = SqlDefinedFunctions::Definition;

void CallScalar(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  auto* def = static_cast<Definition*>(sqlite3_user_data(ctx));
  std::string error;
  sqlite3_stmt* s = def->Acquire(&error);
  if (!s) {
    sqlite3_result_error(ctx, error.c_str(), -1);
    return;
  }
  def->Bind(s, argc, argv);
  const int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    sqlite3_result_value(ctx, sqlite3_column_value(s, 0));
  } else if (rc == SQLITE_DONE) {
    sqlite3_result_null(ctx);
  } else {
    sqlite3_result_error(ctx, ("function " + def->name() + ": " + sqlite3_errmsg(def->db)).c_str(), -1);
  }
  def->Release(s);
}

// ---- table functions: an eponymous virtual table per function ----

struct FunctionTable {
  sqlite3_vtab base;
  Definition* def;
};

struct FunctionCursor {
  sqlite3_vtab_cursor base;
  std::vector<std::vector<sqlite3_value*>> rows;  // Declared columns, then the arguments.
  size_t row = 0;

  void Clear() {
    for (auto& r : rows)
      for (sqlite3_value* v : r) sqlite3_value_free(v);
    rows.clear();
    row = 0;
  }
};

int Connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out, char**) {
  auto* def = static_cast<Definition*>(aux);
  std::string schema = "CREATE TABLE x(";
  for (const PerfettoSqlArgument& c : def->statement.returns) schema += "\"" + c.name + "\", ";
  for (size_t i = 0; i < def->arity(); i++) schema += "_fn_arg" + std::to_string(i) + " HIDDEN, ";
  schema.resize(schema.size() - 2);
  schema += ")";
  const int rc = sqlite3_declare_vtab(db, schema.c_str());
  if (rc != SQLITE_OK) return rc;
  auto* table = new FunctionTable{};
  table->def = def;
  *out = &table->base;
  return SQLITE_OK;
}

int Disconnect(sqlite3_vtab* vtab) {
  delete reinterpret_cast<FunctionTable*>(vtab);
  return SQLITE_OK;
}

// Every argument must be given by equality; a plan without one is refused
// (SQLITE_CONSTRAINT), so SQLite picks the one where the call's arguments
// are known.
int BestIndex(sqlite3_vtab* vtab, sqlite3_index_info* info) {
  const Definition* def = reinterpret_cast<FunctionTable*>(vtab)->def;
  const int first_arg = static_cast<int>(def->statement.returns.size());
  for (size_t a = 0; a < def->arity(); a++) {
    bool found = false;
    for (int i = 0; i < info->nConstraint; i++) {
      const auto& c = info->aConstraint[i];
      if (c.iColumn == first_arg + static_cast<int>(a) && c.op == SQLITE_INDEX_CONSTRAINT_EQ && c.usable) {
        info->aConstraintUsage[i].argvIndex = static_cast<int>(a) + 1;
        info->aConstraintUsage[i].omit = 1;
        found = true;
        break;
      }
    }
    if (!found) return SQLITE_CONSTRAINT;
  }
  info->estimatedCost = 1000;
  info->estimatedRows = 100;
  return SQLITE_OK;
}

int Open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  *out = &(new FunctionCursor{})->base;
  return SQLITE_OK;
}

int Close(sqlite3_vtab_cursor* cursor) {
  auto* c = reinterpret_cast<FunctionCursor*>(cursor);
  c->Clear();
  delete c;
  return SQLITE_OK;
}

int Filter(sqlite3_vtab_cursor* cursor, int, const char*, int argc, sqlite3_value** argv) {
  auto* c = reinterpret_cast<FunctionCursor*>(cursor);
  Definition* def = reinterpret_cast<FunctionTable*>(cursor->pVtab)->def;
  c->Clear();
  std::string error;
  sqlite3_stmt* s = def->Acquire(&error);
  if (!s) {
    cursor->pVtab->zErrMsg = sqlite3_mprintf("%s", error.c_str());
    return SQLITE_ERROR;
  }
  def->Bind(s, argc, argv);
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    std::vector<sqlite3_value*> row;
    for (int column : def->body_column) row.push_back(sqlite3_value_dup(sqlite3_column_value(s, column)));
    for (int i = 0; i < argc; i++) row.push_back(sqlite3_value_dup(argv[i]));
    c->rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) {
    cursor->pVtab->zErrMsg = sqlite3_mprintf("function %s: %s", def->name().c_str(), sqlite3_errmsg(def->db));
    def->Release(s);
    return SQLITE_ERROR;
  }
  def->Release(s);
  return SQLITE_OK;
}

int Next(sqlite3_vtab_cursor* cursor) {
  reinterpret_cast<FunctionCursor*>(cursor)->row++;
  return SQLITE_OK;
}

int Eof(sqlite3_vtab_cursor* cursor) {
  auto* c = reinterpret_cast<FunctionCursor*>(cursor);
  return c->row >= c->rows.size();
}

int Column(sqlite3_vtab_cursor* cursor, sqlite3_context* ctx, int i) {
  auto* c = reinterpret_cast<FunctionCursor*>(cursor);
  const auto& row = c->rows[c->row];
  if (i >= 0 && static_cast<size_t>(i) < row.size()) {
    sqlite3_result_value(ctx, row[static_cast<size_t>(i)]);
  } else {
    sqlite3_result_null(ctx);
  }
  return SQLITE_OK;
}

int Rowid(sqlite3_vtab_cursor* cursor, sqlite3_int64* rowid) {
  *rowid = static_cast<sqlite3_int64>(reinterpret_cast<FunctionCursor*>(cursor)->row);
  return SQLITE_OK;
}

sqlite3_module MakeModule() {
  sqlite3_module m{};
  m.iVersion = 0;
  m.xCreate = nullptr;  // Eponymous only: the function's name is the table.
  m.xConnect = Connect;
  m.xBestIndex = BestIndex;
  m.xDisconnect = Disconnect;
  m.xDestroy = Disconnect;
  m.xOpen = Open;
  m.xClose = Close;
  m.xFilter = Filter;
  m.xNext = Next;
  m.xEof = Eof;
  m.xColumn = Column;
  m.xRowid = Rowid;
  return m;
}

const sqlite3_module kFunctionTableModule = MakeModule();

// Checks the body's parameters and, for a table function, its columns
// against the declaration; fills def->body_column.
Status CheckBody(Definition* def) {
  std::string error;
  sqlite3_stmt* s = def->Acquire(&error);
  if (!s) return Status::Error(error);
  Status status = Status::Ok();
  const PerfettoSqlStatement& st = def->statement;
  for (int p = 1; p <= sqlite3_bind_parameter_count(s) && status.ok(); p++) {
    const char* name = sqlite3_bind_parameter_name(s, p);
    const bool known = name && name[0] == '$' &&
                       std::any_of(st.columns.begin(), st.columns.end(),
                                   [&](const PerfettoSqlArgument& a) { return a.name == name + 1; });
    if (!known)
      status = Status::Error("function " + st.name + ": its body uses " + (name ? name : "a ?") +
                             ", which is not one of its arguments (write them as $name)");
  }
  def->body_column.clear();
  if (status.ok() && st.return_type == "TABLE") {
    const int n = sqlite3_column_count(s);
    for (const PerfettoSqlArgument& column : st.returns) {
      int at = -1;
      for (int i = 0; i < n; i++)
        if (Lower(sqlite3_column_name(s, i)) == Lower(column.name)) at = i;
      if (at < 0) {
        status = Status::Error("function " + st.name + ": it returns column " + column.name +
                               ", which its SELECT does not have");
        break;
      }
      def->body_column.push_back(at);
    }
    if (status.ok() && static_cast<size_t>(n) != st.returns.size())
      status = Status::Error("function " + st.name + ": its SELECT has " + std::to_string(n) + " columns, " +
                             std::to_string(st.returns.size()) + " declared in RETURNS TABLE(...)");
  }
  def->Release(s);
  return status;
}

}  // namespace

SqlDefinedFunctions::SqlDefinedFunctions(sqlite3* db) : db_(db) {}
SqlDefinedFunctions::~SqlDefinedFunctions() = default;

Status SqlDefinedFunctions::Define(const PerfettoSqlStatement& statement) {
  const bool table = statement.return_type == "TABLE";
  const std::string key = Lower(statement.name) + (table ? "" : "/" + std::to_string(statement.columns.size()));
  auto it = by_key_.find(key);
  if (it != by_key_.end() && !statement.or_replace)
    return Status::Error("function " + statement.name + " already exists: use CREATE OR REPLACE PERFETTO FUNCTION");
  if (!table && by_key_.count(Lower(statement.name)))
    return Status::Error(statement.name + " is a table function already: give the scalar function another name");
  auto def = std::make_unique<Definition>();
  def->db = db_;
  def->running = &running_;
  def->statement = statement;
  if (it == by_key_.end() && !table) {
    // Defined before its body is prepared, so that the body may call it.
    if (sqlite3_create_function_v2(db_, statement.name.c_str(), static_cast<int>(statement.columns.size()),
                                   SQLITE_UTF8, def.get(), CallScalar, nullptr, nullptr, nullptr) != SQLITE_OK)
      return Status::Error("cannot define function " + statement.name + ": " + sqlite3_errmsg(db_));
    Status checked = CheckBody(def.get());
    if (!checked.ok()) {
      sqlite3_create_function_v2(db_, statement.name.c_str(), static_cast<int>(statement.columns.size()),
                                 SQLITE_UTF8, nullptr, nullptr, nullptr, nullptr, nullptr);
      return checked;
    }
    by_key_[key] = std::move(def);
    return Status::Ok();
  }
  SLUICE_RETURN_IF_ERROR(CheckBody(def.get()));
  if (it != by_key_.end()) {
    // SQLite holds the old Definition: take the new one's place in it.
    Definition* old = it->second.get();
    if (table && (old->statement.returns.size() != statement.returns.size() ||
                  old->arity() != statement.columns.size()))
      return Status::Error("table function " + statement.name +
                           " cannot change its columns or arguments once defined in this session");
    old->Clear();
    old->statement = statement;
    old->body_column = def->body_column;
    return Status::Ok();
  }
  const int rc = sqlite3_create_module_v2(db_, statement.name.c_str(), &kFunctionTableModule, def.get(), nullptr);
  if (rc != SQLITE_OK) return Status::Error("cannot define function " + statement.name + ": " + sqlite3_errmsg(db_));
  by_key_[key] = std::move(def);
  return Status::Ok();
}

}  // namespace sluice
