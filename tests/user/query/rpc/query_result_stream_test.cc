#include "user/query/rpc/query_result_stream.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "perfetto/trace_processor/trace_processor.pb.h"

namespace sluice {
namespace {

using perfetto::protos::QueryResult;
using CellsBatch = perfetto::protos::QueryResult::CellsBatch;

class QueryResultStreamTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK); }
  void TearDown() override { sqlite3_close(db_); }

  // Every message the stream sent, parsed.
  std::vector<QueryResult> Run(const std::string& sql, QueryResultBatchLimits limits = {}) {
    std::vector<QueryResult> messages;
    StreamQueryResult(db_, nullptr, sql, [&](std::string_view bytes) {
      QueryResult message;
      EXPECT_TRUE(message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
      messages.push_back(message);
      return true;
    }, limits);
    return messages;
  }

  // What a client that parses the whole body as one message sees.
  static QueryResult Merged(const std::vector<QueryResult>& messages) {
    QueryResult merged;
    for (const QueryResult& m : messages) merged.MergeFrom(m);
    return merged;
  }

  sqlite3* db_ = nullptr;
};

TEST_F(QueryResultStreamTest, EachTypeGoesToItsListInCellOrder) {
  QueryResult r = Merged(Run("select 1 as i, 2.5 as d, 'ab' as s, x'00ff' as b, null as n, "
                             "9223372036854775807 as big, -9223372036854775807 - 1 as small"));
  ASSERT_EQ(r.column_names_size(), 7);
  EXPECT_EQ(r.column_names(5), "big");
  ASSERT_EQ(r.batch_size(), 1);
  const CellsBatch& b = r.batch(0);
  EXPECT_TRUE(b.is_last_batch());
  ASSERT_EQ(b.cells_size(), 7);
  EXPECT_EQ(b.cells(0), CellsBatch::CELL_VARINT);
  EXPECT_EQ(b.cells(1), CellsBatch::CELL_FLOAT64);
  EXPECT_EQ(b.cells(2), CellsBatch::CELL_STRING);
  EXPECT_EQ(b.cells(3), CellsBatch::CELL_BLOB);
  EXPECT_EQ(b.cells(4), CellsBatch::CELL_NULL);
  ASSERT_EQ(b.varint_cells_size(), 3);
  EXPECT_EQ(b.varint_cells(1), INT64_MAX);
  EXPECT_EQ(b.varint_cells(2), INT64_MIN);
  EXPECT_EQ(b.float64_cells(0), 2.5);
  EXPECT_EQ(b.string_cells(), std::string("ab\0", 3));
  EXPECT_EQ(b.blob_cells(0), std::string("\0\xff", 2));
  EXPECT_FALSE(r.has_error());
  EXPECT_EQ(r.statement_count(), 1u);
  EXPECT_EQ(r.statement_with_output_count(), 1u);
}

TEST_F(QueryResultStreamTest, BatchesEndAtRowBoundariesAndOnlyTheLastIsFlagged) {
  std::vector<QueryResult> messages =
      Run("with recursive n(i) as (select 1 union all select i + 1 from n where i < 1000) "
          "select i, 'row ' || i as label from n",
          {.max_cells = 100, .max_bytes = 1 << 20});
  ASSERT_GT(messages.size(), 10u);  // Sent while stepping, not at the end.
  EXPECT_EQ(messages[0].column_names_size(), 2);
  int64_t next = 1;
  for (size_t m = 0; m < messages.size(); ++m) {
    ASSERT_EQ(messages[m].batch_size(), 1);
    const CellsBatch& b = messages[m].batch(0);
    EXPECT_EQ(b.cells_size() % 2, 0) << "message " << m << " splits a row";
    EXPECT_LE(b.cells_size(), 100);
    EXPECT_EQ(b.is_last_batch(), m + 1 == messages.size());
    for (int64_t v : b.varint_cells()) EXPECT_EQ(v, next++);
    if (m > 0) {
      EXPECT_EQ(messages[m].column_names_size(), 0);
    }
  }
  EXPECT_EQ(next, 1001);
}

TEST_F(QueryResultStreamTest, ByteLimitAlsoEndsABatch) {
  std::vector<QueryResult> messages =
      Run("with recursive n(i) as (select 1 union all select i + 1 from n where i < 100) "
          "select printf('%.1000c', 'x') from n",
          {.max_cells = 1 << 20, .max_bytes = 10 * 1024});
  EXPECT_GE(messages.size(), 10u);
  for (const QueryResult& m : messages) EXPECT_LE(m.batch(0).string_cells().size(), 11 * 1024u);
}

TEST_F(QueryResultStreamTest, OnlyTheLastStatementsRowsAreSent) {
  QueryResult r = Merged(Run("create table t(x); insert into t values (1), (2); select 5; select x from t order by x"));
  ASSERT_EQ(r.column_names_size(), 1);
  EXPECT_EQ(r.column_names(0), "x");
  ASSERT_EQ(r.batch(0).varint_cells_size(), 2);
  EXPECT_EQ(r.statement_count(), 4u);
  EXPECT_EQ(r.statement_with_output_count(), 2u);
  EXPECT_EQ(r.last_statement_sql(), "select x from t order by x");
}

TEST_F(QueryResultStreamTest, AnErrorEndsTheStreamWithALastBatch) {
  QueryResult r = Merged(Run("select 1; select nope from nowhere"));
  EXPECT_EQ(r.error(), "SQL error at line 1 column 11: no such table: nowhere");
  ASSERT_GE(r.batch_size(), 1);
  EXPECT_TRUE(r.batch(r.batch_size() - 1).is_last_batch());
}

TEST_F(QueryResultStreamTest, AStatementWithoutRowsStillEndsWithALastBatch) {
  QueryResult r = Merged(Run("create table t(x)"));
  EXPECT_EQ(r.column_names_size(), 0);
  ASSERT_EQ(r.batch_size(), 1);
  EXPECT_TRUE(r.batch(0).is_last_batch());
  EXPECT_EQ(r.batch(0).cells_size(), 0);
}

TEST_F(QueryResultStreamTest, APeerThatLeavesStopsTheQuery) {
  int sent = 0;
  StreamQueryResult(db_, nullptr,
                    "with recursive n(i) as (select 1 union all select i + 1 from n) select i from n",
                    [&](std::string_view) { return ++sent < 3; }, {.max_cells = 10, .max_bytes = 1 << 20});
  EXPECT_EQ(sent, 3);  // An endless query ends with the connection.
}

}  // namespace
}  // namespace sluice
