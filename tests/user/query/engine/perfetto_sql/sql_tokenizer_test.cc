#include "user/query/engine/perfetto_sql/sql_tokenizer.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

std::string Kinds(std::string_view text) {
  std::string out;
  for (const SqlToken& t : SignificantSqlTokens(text)) {
    switch (t.kind) {
      case SqlTokenKind::kIdentifier: out += "I"; break;
      case SqlTokenKind::kString: out += "S"; break;
      case SqlTokenKind::kNumber: out += "N"; break;
      case SqlTokenKind::kVariable: out += "V"; break;
      case SqlTokenKind::kPunct: out += t.text; break;
      default: out += "?"; break;
    }
  }
  return out;
}

TEST(SqlTokenizerTest, TokensRebuildTheTextByteForByte) {
  const std::string text =
      "SELECT a, 'it''s; fine' AS \"q\"\"x\", [b c], `d` -- note; here\n FROM t /* ; */ WHERE x = $arg AND y=1.5e-3;";
  std::string rebuilt;
  for (const SqlToken& t : TokenizeSql(text)) rebuilt += t.text;
  EXPECT_EQ(rebuilt, text);
  EXPECT_EQ(Kinds(text), "II,SII,I,IIIII=VII=N;");
}

TEST(SqlTokenizerTest, QuotedIdentifiersGiveTheirNames) {
  const std::vector<SqlToken> t = SignificantSqlTokens("\"a\"\"b\" [c d] `e` plain");
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].Name(), "a\"b");
  EXPECT_EQ(t[1].Name(), "c d");
  EXPECT_EQ(t[2].Name(), "e");
  EXPECT_EQ(t[3].Name(), "plain");
  EXPECT_TRUE(t[3].IsWord("PLAIN"));
}

TEST(SqlTokenizerTest, MacroCallsAndVariables) {
  EXPECT_EQ(Kinds("m!(x, $y) != :z ?1 @w"), "I!(I,V)!=VVV");
}

TEST(SqlTokenizerTest, UnterminatedLiteralsRunToTheEnd) {
  for (const char* text : {"select 'abc", "select \"abc", "select [abc", "select /* abc", "select 'ab''"}) {
    const std::vector<SqlToken> t = TokenizeSql(text);
    ASSERT_FALSE(t.empty());
    EXPECT_EQ(t.back().offset + t.back().text.size(), std::string_view(text).size()) << text;
  }
}

TEST(SqlTokenizerTest, AStatementEndsAtItsSemicolonButNotInsideATriggerBody) {
  const std::string a = "select ';' as x; select 2";
  EXPECT_EQ(FindSqlStatementEnd(a, 0), a.find("; select 2") + 1);
  const std::string trigger =
      "CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; SELECT 2; END; SELECT 3;";
  EXPECT_EQ(FindSqlStatementEnd(trigger, 0), trigger.find("END;") + 4);
  const std::string parens = "CREATE PERFETTO MACRO m(x Expr) RETURNS Expr AS (select 1; );";
  EXPECT_EQ(FindSqlStatementEnd(parens, 0), parens.size());
  EXPECT_EQ(FindSqlStatementEnd("select 1", 0), 8u);
}

}  // namespace
}  // namespace sluice
