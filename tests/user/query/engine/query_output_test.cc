// Tests of user/query/engine/query_output.h: each format's exact bytes for a table
// of awkward values (tests/user/query/query_test_util.h), real numbers,
// blobs, repeated column names, bad UTF-8, statements without results, a
// failing step, and the table format past the rows that fix its widths.
#include "user/query/engine/query_output.h"

#include <sqlite3.h>

#include <string>

#include <gtest/gtest.h>

#include "tests/user/query/query_test_util.h"

namespace sluice {
namespace {

using testing::CaptureOutput;
using testing::TestDatabase;

// The rows of `sql` in `format`; `status` gets WriteQueryResult's.
std::string Format(const TestDatabase& db, const std::string& sql, OutputFormat format,
                   Status* status = nullptr) {
  sqlite3_stmt* stmt = db.Prepare(sql);
  Status result;
  std::string text = CaptureOutput([&](FILE* out) { result = WriteQueryResult(stmt, format, out); });
  sqlite3_finalize(stmt);
  if (status) *status = result;
  else EXPECT_TRUE(result.ok()) << result.message();
  return text;
}

class QueryOutputTest : public ::testing::Test {
 protected:
  void SetUp() override { db_.Exec(testing::kSampleTableSql); }
  std::string Sample(OutputFormat format) { return Format(db_, "SELECT * FROM sample", format); }
  TestDatabase db_;
};

TEST_F(QueryOutputTest, Table) {
  EXPECT_EQ(Sample(OutputFormat::kTable),
            "                  id  name                          value\n"
            "--------------------  ---------------  ------------------\n"
            "                   1  plain                           2.5\n"
            "                   2  [NULL]                       [NULL]\n"
            "                   3  comma, \"quote\"                  0.1\n"
            "                   4  two\\nlines                   -1e+20\n"
            " 9223372036854775807  h\xc3\xa9llo \xe2\x98\x83                         3.0\n"
            "-9223372036854775808  tab\\tback\\slash  0.3333333333333333\n");
}

TEST_F(QueryOutputTest, Csv) {
  // Spelled out in tests/user/query/query_test_util.cc.
  EXPECT_EQ(Sample(OutputFormat::kCsv), testing::kSampleCsv);
}

TEST_F(QueryOutputTest, Tsv) {
  EXPECT_EQ(Sample(OutputFormat::kTsv),
            "id\tname\tvalue\n"
            "1\tplain\t2.5\n"
            "2\t\t\n"
            "3\tcomma, \"quote\"\t0.1\n"
            "4\ttwo\\nlines\t-1e+20\n"
            "9223372036854775807\th\xc3\xa9llo \xe2\x98\x83\t3.0\n"
            "-9223372036854775808\ttab\\tback\\\\slash\t0.3333333333333333\n");
}

TEST_F(QueryOutputTest, Json) {
  EXPECT_EQ(Sample(OutputFormat::kJson),
            "{\"id\":1,\"name\":\"plain\",\"value\":2.5}\n"
            "{\"id\":2,\"name\":null,\"value\":null}\n"
            "{\"id\":3,\"name\":\"comma, \\\"quote\\\"\",\"value\":0.1}\n"
            "{\"id\":4,\"name\":\"two\\nlines\",\"value\":-1e+20}\n"
            "{\"id\":9223372036854775807,\"name\":\"h\xc3\xa9llo \xe2\x98\x83\",\"value\":3.0}\n"
            "{\"id\":-9223372036854775808,\"name\":\"tab\\tback\\\\slash\","
            "\"value\":0.3333333333333333}\n");
}

TEST_F(QueryOutputTest, JsonEscapesControlBytesAndReplacesBadUtf8) {
  // \x01, an overlong '/', a lone continuation byte, a UTF-16 surrogate, a
  // truncated sequence at the end; U+10348 (4 bytes) passes.
  EXPECT_EQ(Format(db_,
                   "SELECT char(1) || CAST(X'c0af' AS TEXT) || CAST(X'80' AS TEXT) || "
                   "CAST(X'eda080' AS TEXT) || 'ok' || char(66376) || CAST(X'e298' AS TEXT) AS s",
                   OutputFormat::kJson),
            // One U+FFFD per bad byte: 2 + 1 + 3 before "ok", 2 after.
            "{\"s\":\"\\u0001\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
            "\xef\xbf\xbdok\xf0\x90\x8d\x88\xef\xbf\xbd\xef\xbf\xbd\"}\n");
}

TEST_F(QueryOutputTest, JsonKeysOfRepeatedColumnsAreNumbered) {
  EXPECT_EQ(Format(db_, "SELECT 1 AS a, 2 AS a, 3 AS \"a:1\", 4 AS \"q\"\"k\"", OutputFormat::kJson),
            "{\"a\":1,\"a:1\":2,\"a:1:1\":3,\"q\\\"k\":4}\n");
}

TEST_F(QueryOutputTest, JsonInfinityAndBlobs) {
  EXPECT_EQ(Format(db_, "SELECT 1e999 AS p, -1e999 AS n, X'00ff10' AS b", OutputFormat::kJson),
            "{\"p\":9e999,\"n\":-9e999,\"b\":\"X'00ff10'\"}\n");
  EXPECT_EQ(Format(db_, "SELECT 1e999 AS p, X'00ff10' AS b", OutputFormat::kCsv),
            "p,b\r\ninf,X'00ff10'\r\n");
}

TEST(QueryOutputRealTest, ShortestRoundTrip) {
  EXPECT_EQ(FormatReal(2.5), "2.5");
  EXPECT_EQ(FormatReal(0.1), "0.1");
  EXPECT_EQ(FormatReal(3.0), "3.0");
  EXPECT_EQ(FormatReal(-0.0), "-0.0");
  EXPECT_EQ(FormatReal(1e20), "1e+20");
  EXPECT_EQ(FormatReal(123456789.0), "123456789.0");
  EXPECT_EQ(FormatReal(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(FormatReal(5e-324), "5e-324");
  EXPECT_EQ(std::stod(FormatReal(0.1 + 0.2)), 0.1 + 0.2);
}

TEST_F(QueryOutputTest, HeaderOnlyForNoRows) {
  const std::string none = "SELECT * FROM sample WHERE 0";
  EXPECT_EQ(Format(db_, none, OutputFormat::kTable),
            "id  name  value\n--  ----  -----\n");
  EXPECT_EQ(Format(db_, none, OutputFormat::kCsv), "id,name,value\r\n");
  EXPECT_EQ(Format(db_, none, OutputFormat::kTsv), "id\tname\tvalue\n");
  EXPECT_EQ(Format(db_, none, OutputFormat::kJson), "");
}

TEST_F(QueryOutputTest, StatementWithoutColumnsRunsAndPrintsNothing) {
  EXPECT_EQ(Format(db_, "INSERT INTO sample VALUES (7, 'new', 7.5)", OutputFormat::kTable), "");
  EXPECT_EQ(Format(db_, "SELECT name FROM sample WHERE id = 7", OutputFormat::kCsv),
            "name\r\nnew\r\n");
}

TEST_F(QueryOutputTest, FailingStepKeepsRowsBeforeItAndReturnsTheError) {
  Status status;
  // abs() of the smallest integer overflows on the last row only.
  std::string text = Format(db_, "SELECT id, abs(id) FROM sample", OutputFormat::kCsv, &status);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "integer overflow");
  EXPECT_EQ(text,
            "id,abs(id)\r\n1,1\r\n2,2\r\n3,3\r\n4,4\r\n"
            "9223372036854775807,9223372036854775807\r\n");
}

TEST_F(QueryOutputTest, TableWidthsComeFromTheFirstRows) {
  db_.Exec("CREATE TABLE many(v TEXT)");
  db_.Exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " +
           std::to_string(kTableWidthRows) + ") INSERT INTO many SELECT 'ab' FROM n");
  db_.Exec("INSERT INTO many VALUES ('longer'), ('c')");
  const std::string text = Format(db_, "SELECT v, 1 AS n FROM many", OutputFormat::kTable);
  EXPECT_TRUE(text.starts_with("v   n\n--  -\nab  1\n")) << text.substr(0, 40);
  // Past the first rows, a longer cell widens only its own line.
  EXPECT_TRUE(text.ends_with("ab  1\nlonger  1\nc   1\n")) << text.substr(text.size() - 40);
}

TEST(QueryOutputFormatTest, Names) {
  for (OutputFormat format :
       {OutputFormat::kTable, OutputFormat::kCsv, OutputFormat::kTsv, OutputFormat::kJson}) {
    EXPECT_EQ(ParseOutputFormat(OutputFormatName(format)), format);
  }
  EXPECT_EQ(ParseOutputFormat("CSV"), std::nullopt);
  EXPECT_EQ(ParseOutputFormat("xml"), std::nullopt);
}

}  // namespace
}  // namespace sluice
