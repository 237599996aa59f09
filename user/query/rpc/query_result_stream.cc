#include "user/query/rpc/query_result_stream.h"

#include <sqlite3.h>

#include <chrono>
#include <cstring>
#include <string>

#include "perfetto/trace_processor/trace_processor.pb.h"
#include "shm/base/status.h"
#include "shm/base/varint.h"
#include "user/query/engine/sql_statements.h"

namespace sluice {

namespace {

// Field tags of QueryResult and QueryResult.CellsBatch
// (protos/perfetto/trace_processor/trace_processor.proto).
constexpr uint8_t kColumnNamesTag = 0x0a;     // 1, length-delimited
constexpr uint8_t kErrorTag = 0x12;           // 2, length-delimited
constexpr uint8_t kBatchTag = 0x1a;           // 3, length-delimited
constexpr uint8_t kStatementCountTag = 0x20;  // 4, varint
constexpr uint8_t kStatementsWithOutputTag = 0x28;  // 5, varint
constexpr uint8_t kLastStatementSqlTag = 0x32;      // 6, length-delimited
constexpr uint8_t kElapsedMsTag = 0x39;             // 7, fixed64
constexpr uint8_t kCellsTag = 0x0a;          // CellsBatch 1, packed
constexpr uint8_t kVarintCellsTag = 0x12;    // 2, packed
constexpr uint8_t kFloat64CellsTag = 0x1a;   // 3, packed
constexpr uint8_t kBlobCellTag = 0x22;       // 4, one per blob
constexpr uint8_t kStringCellsTag = 0x2a;    // 5
constexpr uint8_t kIsLastBatchTag = 0x30;    // 6, varint

using CellsBatch = perfetto::protos::QueryResult::CellsBatch;

void AppendLengthDelimited(uint8_t tag, std::string_view bytes, std::string* out) {
  out->push_back(static_cast<char>(tag));
  AppendVarInt(bytes.size(), out);
  out->append(bytes);
}

// Fills one QueryResult at a time and hands it to the sink.
//
// Hot path (every cell of a result: 63 M for `select * from sched` on a
// 10 M-event trace), so it is hand-encoded, not built with the generated
// message: each cell goes straight into the encoded bytes of its list (the
// packed cell types, varints and doubles, the NUL-separated strings, the
// framed blobs), whose buffers keep their capacity from batch to batch, so
// a batch allocates nothing once the first has sized them. The encoding is
// the generated code's: query_result_stream_test.cc parses every kind of
// cell back with it.
class BatchWriter {
 public:
  BatchWriter(const QueryResultSink& sink, const QueryResultBatchLimits& limits) : sink_(sink), limits_(limits) {}

  void SetColumns(sqlite3_stmt* stmt) {
    columns_ = sqlite3_column_count(stmt);
    for (int i = 0; i < columns_; ++i) {
      const char* name = sqlite3_column_name(stmt, i);
      AppendLengthDelimited(kColumnNamesTag, name ? name : "", &header_);
    }
  }

  // Adds the statement's current row; false when the peer is gone.
  bool AddRow(sqlite3_stmt* stmt) {
    for (int i = 0; i < columns_; ++i) {
      // One value fetch per cell: sqlite3_column_type and then
      // sqlite3_column_int64 would look the column up twice.
      sqlite3_value* value = sqlite3_column_value(stmt, i);
      switch (sqlite3_value_type(value)) {
        case SQLITE_INTEGER: {
          cells_.push_back(CellsBatch::CELL_VARINT);
          uint8_t buf[kMaxVarIntSize];
          const uint8_t* end = EncodeVarInt(static_cast<uint64_t>(sqlite3_value_int64(value)), buf);
          varints_.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(end - buf));
          bytes_ += 4;
          break;
        }
        case SQLITE_FLOAT: {
          cells_.push_back(CellsBatch::CELL_FLOAT64);
          const double d = sqlite3_value_double(value);
          char raw[sizeof(d)];
          memcpy(raw, &d, sizeof(d));  // Little-endian, as the wire's fixed64.
          doubles_.append(raw, sizeof(raw));
          bytes_ += 8;
          break;
        }
        case SQLITE_TEXT: {
          cells_.push_back(CellsBatch::CELL_STRING);
          // The bytes as stored: sqlite3_value_text would first copy a
          // string the tables hand over without its terminating NUL into a
          // malloc'ed one (the database's text is UTF-8 already).
          const char* text = static_cast<const char*>(sqlite3_value_blob(value));
          const size_t size = static_cast<size_t>(sqlite3_value_bytes(value));
          // A NUL ends each string: one inside a value would split it, so
          // the value ends there (as SQLite's C string API reads it).
          const size_t kept = text ? strnlen(text, size) : 0;
          strings_.append(text ? text : "", kept);
          strings_.push_back('\0');
          bytes_ += kept + 1 + 4;  // Upstream's guess, so batches split where its do.
          break;
        }
        case SQLITE_BLOB: {
          cells_.push_back(CellsBatch::CELL_BLOB);
          const size_t size = static_cast<size_t>(sqlite3_value_bytes(value));
          const void* blob = sqlite3_value_blob(value);
          AppendLengthDelimited(kBlobCellTag, std::string_view(static_cast<const char*>(blob), blob ? size : 0),
                                &blobs_);
          bytes_ += size + 4;
          break;
        }
        default:
          cells_.push_back(CellsBatch::CELL_NULL);
          break;
      }
    }
    if (cells_.size() + static_cast<size_t>(columns_) > limits_.max_cells || bytes_ >= limits_.max_bytes) {
      return Send(false);
    }
    return true;
  }

  // The last message: the rest of the rows, the flag, the error and counts.
  void Finish(const Status& status, uint32_t statements, uint32_t statements_with_output,
              const std::string& last_sql, double elapsed_ms) {
    if (!status.ok()) AppendLengthDelimited(kErrorTag, status.message(), &trailer_);
    trailer_.push_back(static_cast<char>(kStatementCountTag));
    AppendVarInt(statements, &trailer_);
    trailer_.push_back(static_cast<char>(kStatementsWithOutputTag));
    AppendVarInt(statements_with_output, &trailer_);
    if (!last_sql.empty()) AppendLengthDelimited(kLastStatementSqlTag, last_sql, &trailer_);
    trailer_.push_back(static_cast<char>(kElapsedMsTag));
    char raw[sizeof(elapsed_ms)];
    memcpy(raw, &elapsed_ms, sizeof(elapsed_ms));
    trailer_.append(raw, sizeof(raw));
    Send(true);
  }

 private:
  bool Send(bool last) {
    // The batch's size first, so that its lists go into the message once.
    const auto field_size = [](size_t bytes) { return bytes ? 1 + VarIntSize(bytes) + bytes : 0; };
    const size_t batch_size = field_size(cells_.size()) + field_size(varints_.size()) +
                              field_size(doubles_.size()) + blobs_.size() + field_size(strings_.size()) +
                              (last ? 2 : 0);
    message_.clear();
    message_.append(header_);  // The column names: the first message only.
    header_.clear();
    message_.push_back(static_cast<char>(kBatchTag));
    AppendVarInt(batch_size, &message_);
    if (!cells_.empty()) AppendLengthDelimited(kCellsTag, cells_, &message_);
    if (!varints_.empty()) AppendLengthDelimited(kVarintCellsTag, varints_, &message_);
    if (!doubles_.empty()) AppendLengthDelimited(kFloat64CellsTag, doubles_, &message_);
    message_.append(blobs_);
    if (!strings_.empty()) AppendLengthDelimited(kStringCellsTag, strings_, &message_);
    if (last) {
      message_.push_back(static_cast<char>(kIsLastBatchTag));
      message_.push_back(1);
      message_.append(trailer_);
    }
    cells_.clear();
    varints_.clear();
    doubles_.clear();
    strings_.clear();
    blobs_.clear();
    bytes_ = 0;
    return sink_(message_);
  }

  const QueryResultSink& sink_;
  const QueryResultBatchLimits limits_;
  int columns_ = 0;
  size_t bytes_ = 0;  // About what the batch's cells take encoded.
  std::string header_, trailer_;
  // The batch's lists, encoded, and the message they go into.
  std::string cells_, varints_, doubles_, strings_, blobs_;
  std::string message_;
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
