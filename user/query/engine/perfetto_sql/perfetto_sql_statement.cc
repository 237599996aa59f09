#include "user/query/engine/perfetto_sql/perfetto_sql_statement.h"

#include <algorithm>

#include "user/query/engine/perfetto_sql/sql_tokenizer.h"

namespace sluice {
namespace {

std::string Upper(std::string_view s) {
  std::string u(s);
  for (char& c : u)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return u;
}

// A cursor over a statement's significant tokens; every Expect* records the
// first error and where.
class Cursor {
 public:
  Cursor(std::string_view text, PerfettoSqlParseError* error)
      : text_(text), tokens_(SignificantSqlTokens(text)), error_(error) {}

  bool AtEnd() const { return i_ >= tokens_.size() || (tokens_[i_].IsPunct(';') && i_ + 1 == tokens_.size()); }
  const SqlToken* Peek(size_t ahead = 0) const {
    return i_ + ahead < tokens_.size() ? &tokens_[i_ + ahead] : nullptr;
  }
  bool PeekWord(std::string_view w, size_t ahead = 0) const {
    const SqlToken* t = Peek(ahead);
    return t && t->IsWord(w);
  }
  bool PeekPunct(char c) const {
    const SqlToken* t = Peek();
    return t && t->IsPunct(c);
  }
  bool TakeWord(std::string_view w) {
    if (!PeekWord(w)) return false;
    i_++;
    return true;
  }
  bool TakePunct(char c) {
    if (!PeekPunct(c)) return false;
    i_++;
    return true;
  }
  bool ExpectWord(std::string_view w) { return TakeWord(w) || Fail("expected " + std::string(w)); }
  bool ExpectPunct(char c) { return TakePunct(c) || Fail(std::string("expected '") + c + "'"); }
  bool ExpectName(std::string* name, const char* what) {
    const SqlToken* t = Peek();
    if (!t || t->kind != SqlTokenKind::kIdentifier) return Fail(std::string("expected ") + what);
    *name = t->Name();
    i_++;
    return true;
  }
  // The rest of the statement after the current token, without a trailing ';'.
  void Rest(std::string* body, size_t* offset) {
    if (AtEnd()) return;
    const size_t start = tokens_[i_].offset;
    size_t end = text_.size();
    if (tokens_.back().IsPunct(';')) end = tokens_.back().offset;
    while (end > start && (text_[end - 1] == ' ' || text_[end - 1] == '\n' || text_[end - 1] == '\t' ||
                           text_[end - 1] == '\r'))
      end--;
    *body = std::string(text_.substr(start, end - start));
    *offset = start;
  }
  bool Fail(const std::string& message) {
    if (error_->message.empty()) {
      error_->offset = i_ < tokens_.size() ? tokens_[i_].offset : text_.size();
      const SqlToken* t = Peek();
      error_->message = message + (t ? " at '" + std::string(t->text) + "'" : " at the end of the statement");
    }
    return false;
  }

 private:
  std::string_view text_;
  std::vector<SqlToken> tokens_;
  PerfettoSqlParseError* error_;
  size_t i_ = 0;
};

// A type: a word, or ID(t.c) / JOINID(t.c).
bool ParseType(Cursor& c, bool argument, std::string* type) {
  std::string word;
  if (!c.ExpectName(&word, "a type")) return false;
  *type = Upper(word);
  if ((*type == "ID" || *type == "JOINID") && c.TakePunct('(')) {
    std::string table, column;
    if (!c.ExpectName(&table, "a table name") || !c.ExpectPunct('.') || !c.ExpectName(&column, "a column name") ||
        !c.ExpectPunct(')'))
      return false;
    *type += "(" + table + "." + column + ")";
  }
  if (!IsPerfettoSqlType(*type, argument))
    return c.Fail("unknown type " + word + " (LONG, INT, UINT, BOOL, DOUBLE, STRING, BYTES, TIMESTAMP, DURATION, ID, "
                  "JOINID, ARGSETID" + (argument ? ", ANY" : "") + ")");
  return true;
}

// (name TYPE, ...); `kinds` takes any word as the type (macro kinds);
// `types` false allows names without types (index columns).
bool ParseList(Cursor& c, std::vector<PerfettoSqlArgument>* out, bool argument, bool kinds, bool types = true) {
  if (!c.ExpectPunct('(')) return false;
  if (c.TakePunct(')')) return true;
  do {
    PerfettoSqlArgument a;
    if (!c.ExpectName(&a.name, "a name")) return false;
    if (kinds) {
      if (!c.ExpectName(&a.type, "a macro argument kind (Expr, TableOrSubquery, ColumnName, ...)")) return false;
    } else if (types && !ParseType(c, argument, &a.type)) {
      return false;
    }
    for (const PerfettoSqlArgument& seen : *out)
      if (Upper(seen.name) == Upper(a.name)) return c.Fail("'" + a.name + "' named twice");
    out->push_back(std::move(a));
  } while (c.TakePunct(','));
  return c.ExpectPunct(')');
}

bool ParseInclude(Cursor& c, PerfettoSqlStatement* out) {
  if (!c.ExpectWord("PERFETTO") || !c.ExpectWord("MODULE")) return false;
  std::string name;
  for (;;) {
    const SqlToken* t = c.Peek();
    if (t && t->IsPunct('*')) {
      c.TakePunct('*');
      name += "*";
      break;
    }
    std::string part;
    if (!c.ExpectName(&part, "a module name (a.b.c)")) return false;
    name += part;
    if (!c.TakePunct('.')) break;
    name += ".";
  }
  out->kind = PerfettoSqlStatementKind::kInclude;
  out->name = name;
  return c.AtEnd() || c.Fail("expected the end of INCLUDE PERFETTO MODULE " + name);
}

bool ParseAfterKind(Cursor& c, const std::string& kind, PerfettoSqlStatement* out) {
  if (kind == "TABLE" || kind == "VIEW") {
    out->kind = kind == "TABLE" ? PerfettoSqlStatementKind::kCreateTable : PerfettoSqlStatementKind::kCreateView;
    if (!c.ExpectName(&out->name, kind == "TABLE" ? "a table name" : "a view name")) return false;
    if (c.PeekPunct('(') && !ParseList(c, &out->columns, false, false)) return false;
    if (!c.ExpectWord("AS")) return false;
  } else if (kind == "FUNCTION") {
    out->kind = PerfettoSqlStatementKind::kCreateFunction;
    if (!c.ExpectName(&out->name, "a function name") || !ParseList(c, &out->columns, true, false)) return false;
    if (!c.ExpectWord("RETURNS")) return false;
    if (c.TakeWord("TABLE")) {
      out->return_type = "TABLE";
      if (!ParseList(c, &out->returns, false, false)) return false;
      if (out->returns.empty()) return c.Fail("a table function returns at least one column");
    } else if (!ParseType(c, false, &out->return_type)) {
      return false;
    }
    if (c.PeekWord("DELEGATES"))
      return c.Fail("DELEGATES TO binds upstream's C++ intrinsics, which sluice does not have");
    if (!c.ExpectWord("AS")) return false;
  } else if (kind == "MACRO") {
    out->kind = PerfettoSqlStatementKind::kCreateMacro;
    if (!c.ExpectName(&out->name, "a macro name") || !ParseList(c, &out->columns, true, true)) return false;
    if (!c.ExpectWord("RETURNS") || !c.ExpectName(&out->return_type, "the macro's return kind") ||
        !c.ExpectWord("AS"))
      return false;
  } else if (kind == "INDEX") {
    out->kind = PerfettoSqlStatementKind::kCreateIndex;
    if (!c.ExpectName(&out->name, "an index name") || !c.ExpectWord("ON") ||
        !c.ExpectName(&out->on_table, "a table name") || !ParseList(c, &out->columns, false, false, false))
      return false;
    if (out->columns.empty()) return c.Fail("an index needs at least one column");
    return c.AtEnd() || c.Fail("expected the end of CREATE PERFETTO INDEX");
  } else {
    return c.Fail("expected TABLE, VIEW, FUNCTION, MACRO or INDEX after PERFETTO");
  }
  c.Rest(&out->body, &out->body_offset);
  if (out->body.empty()) return c.Fail("expected a body after AS");
  return true;
}

}  // namespace

bool IsPerfettoSqlType(std::string_view type, bool argument) {
  static constexpr std::string_view kTypes[] = {"LONG",   "INT",       "UINT",     "BOOL",  "DOUBLE",
                                                "FLOAT",  "STRING",    "BYTES",    "PROTO", "TIMESTAMP",
                                                "DURATION", "ID",      "ARGSETID"};
  if (std::find(std::begin(kTypes), std::end(kTypes), type) != std::end(kTypes)) return true;
  if (argument && type == "ANY") return true;
  return (type.rfind("ID(", 0) == 0 || type.rfind("JOINID(", 0) == 0) && type.back() == ')';
}

bool ParsePerfettoSqlStatement(std::string_view statement, PerfettoSqlStatement* out, PerfettoSqlParseError* error) {
  *out = PerfettoSqlStatement();
  *error = PerfettoSqlParseError();
  Cursor c(statement, error);
  if (c.PeekWord("INCLUDE")) {
    c.TakeWord("INCLUDE");
    return ParseInclude(c, out);
  }
  if (c.PeekWord("DROP") && c.PeekWord("PERFETTO", 1)) {
    c.TakeWord("DROP");
    c.TakeWord("PERFETTO");
    out->kind = PerfettoSqlStatementKind::kDropIndex;
    if (!c.ExpectWord("INDEX") || !c.ExpectName(&out->name, "an index name") || !c.ExpectWord("ON") ||
        !c.ExpectName(&out->on_table, "a table name"))
      return false;
    return c.AtEnd() || c.Fail("expected the end of DROP PERFETTO INDEX");
  }
  const bool create_perfetto =
      c.PeekWord("CREATE") &&
      (c.PeekWord("PERFETTO", 1) || (c.PeekWord("OR", 1) && c.PeekWord("REPLACE", 2) && c.PeekWord("PERFETTO", 3)));
  if (!create_perfetto) return true;  // Plain SQL.
  c.TakeWord("CREATE");
  if (c.TakeWord("OR")) {
    c.TakeWord("REPLACE");
    out->or_replace = true;
  }
  c.TakeWord("PERFETTO");
  std::string kind;
  for (const char* k : {"TABLE", "VIEW", "FUNCTION", "MACRO", "INDEX"}) {
    if (c.TakeWord(k)) {
      kind = k;
      break;
    }
  }
  return ParseAfterKind(c, kind, out);
}

}  // namespace sluice
