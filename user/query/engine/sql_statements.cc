#include "user/query/engine/sql_statements.h"

#include <sqlite3.h>

#include <algorithm>

namespace sluice {
namespace {

// The one line every failed statement of a script becomes.
Status SqlError(std::string_view script, size_t offset, const std::string& message,
                int first_line) {
  const SqlPosition at = PositionAtOffset(script, offset);
  return Status::Error("SQL error at line " + std::to_string(at.line + first_line - 1) +
                       " column " + std::to_string(at.column) + ": " + message);
}

// Frees a prepared statement when it goes out of scope.
struct FinalizeOnExit {
  sqlite3_stmt* stmt;
  ~FinalizeOnExit() { sqlite3_finalize(stmt); }
};

}  // namespace

SqlPosition PositionAtOffset(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  SqlPosition at;
  for (size_t i = 0; i < offset; i++) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      at.line++;
      at.column = 1;
    } else if ((c & 0xc0) != 0x80) {  // Not a UTF-8 continuation byte.
      at.column++;
    }
  }
  return at;
}

size_t SkipSqlSeparators(std::string_view text, size_t offset) {
  size_t i = offset;
  while (i < text.size()) {
    const char c = text[i];
    if (c == ';' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      i++;
    } else if (text.substr(i, 2) == "--") {
      const size_t nl = text.find('\n', i);
      i = nl == std::string_view::npos ? text.size() : nl + 1;
    } else if (text.substr(i, 2) == "/*") {
      // SQLite takes an unterminated block comment to run to the end.
      const size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 2;
    } else {
      break;
    }
  }
  return i;
}

Status StepToEnd(sqlite3_stmt* stmt) {
  for (;;) {
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) return Status::Ok();
    if (rc != SQLITE_ROW) return Status::Error(sqlite3_errmsg(sqlite3_db_handle(stmt)));
  }
}

Status RunSqlScript(sqlite3* db, std::string_view script, const SqlStatementRunner& run,
                    int first_line, SqlDialect* dialect) {
  size_t offset = SkipSqlSeparators(script, 0);
  while (offset < script.size()) {
    if (dialect) {
      const size_t end = std::max(dialect->StatementEnd(script, offset), offset + 1);
      SqlDialect::Outcome outcome;
      Status handled = dialect->Handle(script.substr(offset, end - offset), &outcome);
      if (!handled.ok()) return SqlError(script, offset + outcome.error_offset, handled.message(), first_line);
      if (outcome.ran || outcome.rewritten) {
        if (outcome.rewritten) {
          sqlite3_stmt* stmt = nullptr;
          const int rc = sqlite3_prepare_v2(db, outcome.sql.c_str(), static_cast<int>(outcome.sql.size()), &stmt,
                                            nullptr);
          FinalizeOnExit finalize{stmt};
          if (rc != SQLITE_OK) return SqlError(script, offset, sqlite3_errmsg(db), first_line);
          if (stmt != nullptr) {
            SqlStatement statement;
            statement.stmt = stmt;
            statement.offset = offset;
            statement.last = SkipSqlSeparators(script, end) == script.size();
            Status status = run(statement);
            if (!status.ok()) return SqlError(script, offset, status.message(), first_line);
          }
        }
        offset = SkipSqlSeparators(script, end);
        continue;
      }
    }
    const char* start = script.data() + offset;
    const char* tail = nullptr;
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v2(db, start, static_cast<int>(script.size() - offset), &stmt,
                                      &tail);
    FinalizeOnExit finalize{stmt};
    if (rc != SQLITE_OK) {
      const int error_offset = sqlite3_error_offset(db);
      const std::string message = sqlite3_errmsg(db);
      size_t at = error_offset >= 0 ? offset + static_cast<size_t>(error_offset) : offset;
      // The script ended inside the statement ("SELECT 1 +"): where more
      // was expected is the end.
      if (error_offset < 0 && message == "incomplete input") at = script.size();
      return SqlError(script, at, message, first_line);
    }
    const size_t next = tail ? static_cast<size_t>(tail - script.data()) : script.size();
    if (stmt != nullptr) {
      SqlStatement statement;
      statement.stmt = stmt;
      statement.offset = offset;
      statement.last = SkipSqlSeparators(script, next) == script.size();
      Status status = run(statement);
      if (!status.ok()) return SqlError(script, offset, status.message(), first_line);
    }
    // A statement that was all comments leaves stmt null and moves on too.
    offset = SkipSqlSeparators(script, std::max(next, offset + 1));
  }
  return Status::Ok();
}

Status ExecSql(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) == SQLITE_OK) return Status::Ok();
  std::string message = error ? error : sqlite3_errmsg(db);
  sqlite3_free(error);
  return Status::Error(message);
}

}  // namespace sluice
