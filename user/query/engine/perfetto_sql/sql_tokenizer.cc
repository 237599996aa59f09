#include "user/query/engine/perfetto_sql/sql_tokenizer.h"

#include <sqlite3.h>

namespace sluice {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
// SQLite takes any byte >= 0x80 as part of an identifier (UTF-8 names).
bool IsIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || static_cast<unsigned char>(c) >= 0x80;
}
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c) || c == '$'; }
char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Just past the closing `close` of a literal opened at `i`, where a doubled
// `close` stands for itself; text.size() and *closed false when it never
// closes.
size_t SkipQuoted(std::string_view text, size_t i, char close, bool* closed) {
  *closed = false;
  for (size_t j = i + 1; j < text.size(); j++) {
    if (text[j] != close) continue;
    if (close != ']' && j + 1 < text.size() && text[j + 1] == close) {
      j++;
      continue;
    }
    *closed = true;
    return j + 1;
  }
  return text.size();
}

SqlToken Next(std::string_view text, size_t i) {
  SqlToken t;
  t.offset = i;
  const char c = text[i];
  size_t end = i + 1;
  if (IsSpace(c)) {
    t.kind = SqlTokenKind::kSpace;
    while (end < text.size() && IsSpace(text[end])) end++;
  } else if (c == '-' && i + 1 < text.size() && text[i + 1] == '-') {
    t.kind = SqlTokenKind::kComment;
    while (end < text.size() && text[end] != '\n') end++;
  } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
    t.kind = SqlTokenKind::kComment;
    const size_t close = text.find("*/", i + 2);
    end = close == std::string_view::npos ? text.size() : close + 2;
  } else if (c == '\'' || c == '"' || c == '`' || c == '[') {
    bool closed = false;
    end = SkipQuoted(text, i, c == '[' ? ']' : c, &closed);
    t.kind = !closed ? SqlTokenKind::kOther : c == '\'' ? SqlTokenKind::kString : SqlTokenKind::kIdentifier;
  } else if (IsIdentStart(c)) {
    t.kind = SqlTokenKind::kIdentifier;
    while (end < text.size() && IsIdentChar(text[end])) end++;
  } else if (IsDigit(c) || (c == '.' && i + 1 < text.size() && IsDigit(text[i + 1]))) {
    t.kind = SqlTokenKind::kNumber;
    while (end < text.size() && (IsIdentChar(text[end]) || text[end] == '.' ||
                                 ((text[end] == '+' || text[end] == '-') && Lower(text[end - 1]) == 'e')))
      end++;
  } else if (c == '$' || c == ':' || c == '@' || c == '?') {
    t.kind = SqlTokenKind::kVariable;
    while (end < text.size() && (IsIdentChar(text[end]) || (c == '?' && IsDigit(text[end])))) end++;
    if (end == i + 1 && c != '?') t.kind = SqlTokenKind::kPunct;
  } else if (std::string_view("(),;.!=<>+-*/%|&~").find(c) != std::string_view::npos) {
    t.kind = SqlTokenKind::kPunct;
  }
  t.text = text.substr(i, end - i);
  return t;
}

}  // namespace

bool SqlToken::IsWord(std::string_view word) const {
  if (kind != SqlTokenKind::kIdentifier || text.size() != word.size()) return false;
  for (size_t i = 0; i < word.size(); i++)
    if (Lower(text[i]) != Lower(word[i])) return false;
  return true;
}

std::string SqlToken::Name() const {
  if (kind != SqlTokenKind::kIdentifier || text.empty()) return std::string(text);
  const char open = text[0];
  if (open != '"' && open != '`' && open != '[') return std::string(text);
  const char close = open == '[' ? ']' : open;
  std::string name;
  for (size_t i = 1; i + 1 < text.size(); i++) {
    name += text[i];
    if (text[i] == close && close != ']' && i + 2 < text.size() && text[i + 1] == close) i++;
  }
  return name;
}

std::vector<SqlToken> TokenizeSql(std::string_view text) {
  std::vector<SqlToken> tokens;
  for (size_t i = 0; i < text.size();) {
    tokens.push_back(Next(text, i));
    i += tokens.back().text.size();
  }
  return tokens;
}

std::vector<SqlToken> SignificantSqlTokens(std::string_view text) {
  std::vector<SqlToken> tokens;
  for (const SqlToken& t : TokenizeSql(text))
    if (t.kind != SqlTokenKind::kSpace && t.kind != SqlTokenKind::kComment) tokens.push_back(t);
  return tokens;
}

size_t FindSqlStatementEnd(std::string_view text, size_t offset) {
  int depth = 0;
  for (size_t i = offset; i < text.size();) {
    const SqlToken t = Next(text, i);
    i += t.text.size();
    if (t.IsPunct('(')) depth++;
    if (t.IsPunct(')') && depth > 0) depth--;
    if (!t.IsPunct(';') || depth != 0) continue;
    // sqlite3_complete knows where a CREATE TRIGGER's body ends.
    const std::string prefix(text.substr(offset, i - offset));
    if (sqlite3_complete(prefix.c_str())) return i;
  }
  return text.size();
}

}  // namespace sluice
