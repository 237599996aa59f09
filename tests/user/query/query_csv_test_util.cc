#include "tests/user/query/query_csv_test_util.h"

#include <sqlite3.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <vector>

#include "user/query/engine/sql_statements.h"

namespace sluice::testing {
namespace {

std::string FormatReal(double value) {
  // "%f" of the largest double is 309 digits, a sign and ".000000".
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%f", value);
  return buf;
}

void AppendValue(sqlite3_stmt* stmt, int column, std::string* out) {
  switch (sqlite3_column_type(stmt, column)) {
    case SQLITE_NULL:
      *out += "\"[NULL]\"";
      break;
    case SQLITE_INTEGER: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%" PRId64,
                    static_cast<int64_t>(sqlite3_column_int64(stmt, column)));
      *out += buf;
      break;
    }
    case SQLITE_FLOAT:
      *out += FormatReal(sqlite3_column_double(stmt, column));
      break;
    case SQLITE_TEXT: {
      // The shell prints the text as a C string: it ends at a NUL byte.
      const char* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
      *out += '"';
      *out += text ? text : "";
      *out += '"';
      break;
    }
    default:  // SQLITE_BLOB
      *out += "\"<raw bytes>\"";
      break;
  }
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  return lines;
}

std::string Shorten(std::string_view line) {
  constexpr size_t kMax = 200;
  if (line.size() <= kMax) return std::string(line);
  return std::string(line.substr(0, kMax)) + "...";
}

}  // namespace

StatusOr<std::string> QueryToTraceProcessorCsv(sqlite3* db, std::string_view sql, SqlDialect* dialect) {
  std::string out;
  bool first_table = true;
  Status ran = RunSqlScript(
      db, sql,
      [&](const SqlStatement& statement) {
        sqlite3_stmt* stmt = statement.stmt;
        const int columns = sqlite3_column_count(stmt);
        if (columns > 0) {
          if (!first_table) out += '\n';
          first_table = false;
          for (int c = 0; c < columns; c++) {
            if (c > 0) out += ',';
            out += '"';
            out += sqlite3_column_name(stmt, c);
            out += '"';
          }
          out += '\n';
        }
        int rc;
        while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
          for (int c = 0; c < columns; c++) {
            if (c > 0) out += ',';
            AppendValue(stmt, c, &out);
          }
          out += '\n';
        }
        if (rc != SQLITE_DONE) return Status::Error(sqlite3_errmsg(db));
        return Status::Ok();
      },
      1, dialect);
  if (!ran.ok()) return ran;  // "SQL error at line L column C: ..."
  return out;
}

std::string DescribeCsvDifference(std::string_view expected, std::string_view actual,
                                  size_t max_lines) {
  if (expected == actual) return "";
  std::vector<std::string_view> want = SplitLines(expected);
  std::vector<std::string_view> got = SplitLines(actual);
  size_t lines = std::max(want.size(), got.size());
  size_t first = 0;
  while (first < lines && first < want.size() && first < got.size() &&
         want[first] == got[first]) {
    first++;
  }
  std::string out = "expected " + std::to_string(want.size()) + " lines, actual " +
                    std::to_string(got.size()) + " lines";
  if (first == lines) {
    // Same lines: only the final newline differs.
    return out + "; the texts differ only in their last newline\n";
  }
  out += "; first difference at line " + std::to_string(first + 1) + ":\n";
  size_t shown = 0;
  for (size_t i = first; i < lines && shown < max_lines; i++) {
    bool have_want = i < want.size();
    bool have_got = i < got.size();
    if (have_want && have_got && want[i] == got[i]) continue;
    std::string number = std::to_string(i + 1);
    out += "  line " + number + " expected: " +
           (have_want ? Shorten(want[i]) : std::string("<none>")) + "\n";
    out += "  line " + number + " actual:   " +
           (have_got ? Shorten(got[i]) : std::string("<none>")) + "\n";
    shown++;
  }
  return out;
}

}  // namespace sluice::testing
