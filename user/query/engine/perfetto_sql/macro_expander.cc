#include "user/query/engine/perfetto_sql/macro_expander.h"

#include "user/query/engine/perfetto_sql/sql_tokenizer.h"

namespace sluice {
namespace {

constexpr int kMaxDepth = 32;

bool IsSignificant(const SqlToken& t) { return t.kind != SqlTokenKind::kSpace && t.kind != SqlTokenKind::kComment; }

// The index of the next significant token at or after `i`, or tokens.size().
size_t NextSignificant(const std::vector<SqlToken>& tokens, size_t i) {
  while (i < tokens.size() && !IsSignificant(tokens[i])) i++;
  return i;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// A call starts at tokens[i]: identifier, then '!' right after it, then '('.
bool CallAt(const std::vector<SqlToken>& tokens, size_t i) {
  if (tokens[i].kind != SqlTokenKind::kIdentifier || i + 1 >= tokens.size() || !tokens[i + 1].IsPunct('!'))
    return false;
  const size_t open = NextSignificant(tokens, i + 2);
  return open < tokens.size() && tokens[open].IsPunct('(');
}

bool Expand(std::string_view text, const PerfettoSqlMacroLookup& lookup, int depth, std::string* out,
            PerfettoSqlParseError* error);

// The body with each $arg replaced by its argument's text.
std::string Substitute(const PerfettoSqlMacro& macro, const std::vector<std::string>& values) {
  std::string result;
  for (const SqlToken& t : TokenizeSql(macro.body)) {
    bool replaced = false;
    if (t.kind == SqlTokenKind::kVariable && t.text.size() > 1 && t.text[0] == '$') {
      for (size_t a = 0; a < macro.args.size(); a++) {
        if (t.text.substr(1) == macro.args[a].name) {
          result += values[a];
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) result += t.text;
  }
  return result;
}

bool Expand(std::string_view text, const PerfettoSqlMacroLookup& lookup, int depth, std::string* out,
            PerfettoSqlParseError* error) {
  const std::vector<SqlToken> tokens = TokenizeSql(text);
  out->clear();
  size_t copied = 0;  // Of `text`, into *out.
  for (size_t i = 0; i < tokens.size(); i++) {
    if (!CallAt(tokens, i)) continue;
    const SqlToken& name = tokens[i];
    auto fail = [&](const std::string& message) {
      error->offset = name.offset;
      error->message = message;
      return false;
    };
    if (depth >= kMaxDepth)
      return fail("macro " + std::string(name.text) + "! expands more than " + std::to_string(kMaxDepth) +
                  " levels deep: does it call itself?");
    const PerfettoSqlMacro* macro = lookup(name.Name());
    if (!macro)
      return fail("no such macro: " + std::string(name.text) +
                  "! (define it with CREATE PERFETTO MACRO, or INCLUDE the module that does)");
    // The arguments: split at the commas of the call's own parentheses.
    size_t j = NextSignificant(tokens, i + 2);
    const size_t args_start = tokens[j].offset + 1;
    std::vector<std::string> values;
    size_t arg_start = args_start;
    int level = 0;
    size_t close = tokens.size();
    for (j = j + 1; j < tokens.size(); j++) {
      const SqlToken& t = tokens[j];
      if (t.IsPunct('(')) level++;
      if (t.IsPunct(')') && level-- == 0) {
        close = j;
        break;
      }
      if (t.IsPunct(',') && level == 0) {
        values.emplace_back(Trim(text.substr(arg_start, t.offset - arg_start)));
        arg_start = t.offset + 1;
      }
    }
    if (close == tokens.size()) return fail("macro call " + std::string(name.text) + "!( is not closed");
    std::string_view last = Trim(text.substr(arg_start, tokens[close].offset - arg_start));
    if (!last.empty() || !values.empty()) values.emplace_back(last);
    if (values.size() != macro->args.size())
      return fail("macro " + macro->name + "! takes " + std::to_string(macro->args.size()) + " argument" +
                  (macro->args.size() == 1 ? "" : "s") + ", given " + std::to_string(values.size()));
    // Arguments first (they may call macros), then the result.
    for (std::string& v : values) {
      std::string expanded;
      PerfettoSqlParseError inner;
      if (!Expand(v, lookup, depth + 1, &expanded, &inner)) return fail(inner.message);
      v = std::move(expanded);
    }
    std::string body;
    if (macro->native) {
      std::string native_error;
      if (!macro->native(values, &body, &native_error)) return fail(macro->name + "!: " + native_error);
    } else {
      body = Substitute(*macro, values);
    }
    std::string expanded;
    PerfettoSqlParseError inner;
    if (!Expand(body, lookup, depth + 1, &expanded, &inner))
      return fail("in macro " + macro->name + "!: " + inner.message);
    out->append(text.substr(copied, name.offset - copied));
    out->append(expanded);
    copied = tokens[close].offset + 1;
    i = close;
  }
  out->append(text.substr(copied));
  return true;
}

}  // namespace

bool HasPerfettoSqlMacroCall(std::string_view text) {
  const std::vector<SqlToken> tokens = TokenizeSql(text);
  for (size_t i = 0; i < tokens.size(); i++)
    if (CallAt(tokens, i)) return true;
  return false;
}

bool ExpandPerfettoSqlMacros(std::string_view text, const PerfettoSqlMacroLookup& lookup, std::string* out,
                             PerfettoSqlParseError* error) {
  *error = PerfettoSqlParseError();
  return Expand(text, lookup, 0, out, error);
}

}  // namespace sluice
