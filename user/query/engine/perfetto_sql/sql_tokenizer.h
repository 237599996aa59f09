// SqlTokenizer: splits SQL text into the tokens PerfettoSQL needs to see
// (identifiers, keywords, strings, numbers, variables, punctuation), with
// comments and whitespace kept as tokens of their own so that a statement
// can be rebuilt from its tokens byte for byte.
//
// Why hand-written: SQLite's tokenizer is not part of its API, and
// PerfettoSQL's statements (INCLUDE PERFETTO MODULE, CREATE PERFETTO ...,
// macro calls `name!(...)`) are not SQL SQLite can prepare, so they must be
// recognised before SQLite sees them. It follows SQLite's lexical rules for
// what matters here: '...' strings with '' escapes, "..." `...` and [...]
// quoted identifiers, -- and /* */ comments, $name :name @name ?N variables.
// It never fails: text it cannot place (an unterminated string or comment)
// becomes one token to the end, which SQLite then reports as the error it is.
//
// The text is outside input (a user's query, a module file): every index is
// bounds-checked; the fuzz target tests/fuzz/perfetto_sql_fuzzer.cc feeds it
// arbitrary bytes.
#ifndef SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_SQL_TOKENIZER_H_
#define SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_SQL_TOKENIZER_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

enum class SqlTokenKind {
  kSpace,       // Whitespace.
  kComment,     // -- to the end of the line, or /* ... */.
  kIdentifier,  // A bare word (keywords included) or a quoted identifier.
  kString,      // '...'
  kNumber,
  kVariable,    // $name, :name, @name, ?, ?N
  kPunct,       // One character: ( ) , ; . ! = < > + - * / % | & ~
  kOther,       // Anything else (one byte), or an unterminated literal.
};

struct SqlToken {
  SqlTokenKind kind = SqlTokenKind::kOther;
  size_t offset = 0;  // In the text tokenized.
  std::string_view text;
  // A bare identifier equal to `word`, ignoring ASCII case.
  bool IsWord(std::string_view word) const;
  bool IsPunct(char c) const { return kind == SqlTokenKind::kPunct && text.size() == 1 && text[0] == c; }
  // An identifier's name: quotes removed (and doubled quotes undone).
  std::string Name() const;
};

// Every token of `text`, in order; their texts put together are `text`.
std::vector<SqlToken> TokenizeSql(std::string_view text);

// The same without whitespace and comments.
std::vector<SqlToken> SignificantSqlTokens(std::string_view text);

// Where the statement that starts at `offset` ends: just past its ';' (a ';'
// outside parentheses where SQLite agrees the statement is complete, so a
// trigger body's ';' does not end it), or text.size().
size_t FindSqlStatementEnd(std::string_view text, size_t offset);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_SQL_TOKENIZER_H_
