#include "user/query/rpc/query_result_stream.h"

#include <sqlite3.h>

#include <chrono>
#include <string>

#include "perfetto/trace_processor/trace_processor.pb.h"
#include "shm/base/status.h"
#include "user/query/engine/sql_statements.h"

namespace sluice {

namespace {

using perfetto::protos::QueryResult;
using CellsBatch = perfetto::protos::QueryResult::CellsBatch;

// Fills one QueryResult at a time and hands it to the sink. The message is
// reused: Clear() keeps the repeated fields' storage, so after the first
// batch, filling one allocates nothing but string growth.
class BatchWriter {
 public:
  BatchWriter(const QueryResultSink& sink, const QueryResultBatchLimits& limits)
      : sink_(sink), limits_(limits), batch_(message_.add_batch()) {}

  void SetColumns(sqlite3_stmt* stmt) {
    columns_ = sqlite3_column_count(stmt);
    for (int i = 0; i < columns_; ++i) {
      const char* name = sqlite3_column_name(stmt, i);
      message_.add_column_names(name ? name : "");
    }
  }

  // Adds the statement's current row; false when the peer is gone.
  bool AddRow(sqlite3_stmt* stmt) {
    for (int i = 0; i < columns_; ++i) {
      switch (sqlite3_column_type(stmt, i)) {
        case SQLITE_INTEGER:
          batch_->add_cells(CellsBatch::CELL_VARINT);
          batch_->add_varint_cells(sqlite3_column_int64(stmt, i));
          bytes_ += 4;
          break;
        case SQLITE_FLOAT:
          batch_->add_cells(CellsBatch::CELL_FLOAT64);
          batch_->add_float64_cells(sqlite3_column_double(stmt, i));
          bytes_ += 8;
          break;
        case SQLITE_TEXT: {
          batch_->add_cells(CellsBatch::CELL_STRING);
          const char* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
          int size = sqlite3_column_bytes(stmt, i);
          // A NUL ends each string: one inside a value would split it, so
          // the value ends there (SQLite's own C API does the same).
          std::string* strings = batch_->mutable_string_cells();
          strings->append(text, strnlen(text, static_cast<size_t>(size)));
          strings->push_back('\0');
          bytes_ += static_cast<size_t>(size) + 1;
          break;
        }
        case SQLITE_BLOB: {
          batch_->add_cells(CellsBatch::CELL_BLOB);
          const void* blob = sqlite3_column_blob(stmt, i);
          int size = sqlite3_column_bytes(stmt, i);
          batch_->add_blob_cells(blob ? std::string(static_cast<const char*>(blob), static_cast<size_t>(size))
                                      : std::string());
          bytes_ += static_cast<size_t>(size) + 2;
          break;
        }
        default:
          batch_->add_cells(CellsBatch::CELL_NULL);
          break;
      }
    }
    if (static_cast<size_t>(batch_->cells_size()) + static_cast<size_t>(columns_) > limits_.max_cells ||
        bytes_ >= limits_.max_bytes) {
      return Send();
    }
    return true;
  }

  // The last message: the rest of the rows, the flag, the error and counts.
  void Finish(const Status& status, uint32_t statements, uint32_t statements_with_output,
              const std::string& last_sql, double elapsed_ms) {
    batch_->set_is_last_batch(true);
    if (!status.ok()) message_.set_error(status.message());
    message_.set_statement_count(statements);
    message_.set_statement_with_output_count(statements_with_output);
    if (!last_sql.empty()) message_.set_last_statement_sql(last_sql);
    message_.set_elapsed_time_ms(elapsed_ms);
    Send();
  }

 private:
  bool Send() {
    bool delivered = sink_(message_.SerializeAsString());
    message_.Clear();
    batch_ = message_.add_batch();
    bytes_ = 0;
    return delivered;
  }

  const QueryResultSink& sink_;
  const QueryResultBatchLimits limits_;
  QueryResult message_;
  CellsBatch* batch_;
  int columns_ = 0;
  size_t bytes_ = 0;  // About what the batch's cells take serialized.
};

}  // namespace

void StreamQueryResult(sqlite3* db, SqlDialect* dialect, std::string_view sql, const QueryResultSink& sink,
                       const QueryResultBatchLimits& limits) {
  const auto start = std::chrono::steady_clock::now();
  BatchWriter writer(sink, limits);
  uint32_t statements = 0;
  uint32_t statements_with_output = 0;
  std::string last_sql;
  bool peer_gone = false;
  Status status = RunSqlScript(db, sql, [&](const SqlStatement& statement) -> Status {
    ++statements;
    const bool has_output = sqlite3_column_count(statement.stmt) > 0;
    if (has_output) ++statements_with_output;
    if (!statement.last) return StepToEnd(statement.stmt);
    if (const char* text = sqlite3_sql(statement.stmt)) last_sql = text;
    writer.SetColumns(statement.stmt);
    for (;;) {
      int rc = sqlite3_step(statement.stmt);
      if (rc == SQLITE_DONE) return Status::Ok();
      if (rc != SQLITE_ROW) return Status::Error(sqlite3_errmsg(db));
      if (!writer.AddRow(statement.stmt)) {
        peer_gone = true;
        return Status::Error("the client closed the connection");
      }
    }
  }, 1, dialect);
  if (peer_gone) return;
  double elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  writer.Finish(status, statements, statements_with_output, last_sql, elapsed_ms);
}

}  // namespace sluice
