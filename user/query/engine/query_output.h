// Query results as text: steps a prepared SQLite statement to its end and
// writes its column names and rows in one of four formats. Used by
// `sluice query` for -q/-f and by its shell (docs/QUERY.md, "Output").
//
//   table  columns aligned for reading: the header, a rule of dashes, one line
//          per row; numbers right-aligned, text left-aligned, NULL as [NULL]
//          (as trace_processor_shell shows it). Widths come from the first
//          kTableWidthRows rows, so a large result streams instead of being
//          held in memory; a longer cell after them widens only its own line.
//          Newlines, CRs, tabs and other control bytes in a cell are shown as
//          \n, \r, \t, \xNN so each row stays on one line.
//   csv    RFC 4180: a header row, CRLF line ends, a field holding a comma,
//          a quote, CR or LF is quoted with its quotes doubled; NULL is an
//          empty field.
//   tsv    a header row, tab-separated, LF line ends; tab, LF, CR and
//          backslash inside a value are written \t, \n, \r, \\ (the
//          convention of PostgreSQL's COPY text format); NULL is empty.
//   json   JSON lines: one object per row, keys the column names (a repeated
//          name gets ":1", ":2", ... as SQLite's CREATE TABLE AS names it),
//          NULL null, integers and reals as numbers, text as strings (bytes
//          that are not UTF-8 become U+FFFD), ±infinity as ±9e999 (SQLite's
//          JSON functions do the same; JSON has no infinity).
//
// Reals are written in the shortest form that reads back as the same double
// ("2.5", "0.1", "1e+20"), with ".0" added to a whole number so that a real
// still looks like one ("3.0"). Blobs are written as SQL literals (X'0aff').
#ifndef SLUICE_USER_QUERY_ENGINE_QUERY_OUTPUT_H_
#define SLUICE_USER_QUERY_ENGINE_QUERY_OUTPUT_H_

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shm/base/status.h"

struct sqlite3_stmt;

namespace sluice {

enum class OutputFormat { kTable, kCsv, kTsv, kJson };

// "table", "csv", "tsv", "json" (exactly); nullopt otherwise.
std::optional<OutputFormat> ParseOutputFormat(std::string_view name);
const char* OutputFormatName(OutputFormat format);

// How many rows the table format reads before it fixes the column widths.
inline constexpr size_t kTableWidthRows = 1000;

// Steps `stmt` until SQLITE_DONE, writing its header and rows to `out`.
// A statement without result columns (CREATE, INSERT, ...) is run and writes
// nothing. When a step fails, the rows before it are written and the error
// is returned: SQLite's message, without a position (RunSqlScript in
// sql_statements.h adds one). Write errors on `out` are left in ferror(out)
// for the caller to report once.
Status WriteQueryResult(sqlite3_stmt* stmt, OutputFormat format, FILE* out);

// One cell of a result held in memory: its SQLite type (SQLITE_NULL,
// SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT; a blob as text) and its text as
// WriteQueryResult would print it (numbers formatted, reals by FormatReal).
struct ResultCell {
  int type = 5;  // SQLITE_NULL (query_output.cc checks the value)
  std::string text;
};

// Reads column `column` of `stmt`'s current row into `cell` as
// WriteQueryResult prints it, reusing the cell's string.
void ReadResultCell(sqlite3_stmt* stmt, int column, ResultCell* cell);

// A result written a row at a time, exactly as WriteQueryResult writes a
// statement's: Header() once, Row() for each row (as many cells as the
// header has names), End() at the end (the table format holds its first
// kTableWidthRows rows until then or until it has them all). For a result put
// together from several sources (sluice query over many traces).
class ResultRowWriter {
 public:
  virtual ~ResultRowWriter() = default;
  virtual void Header(const std::vector<std::string>& names) = 0;
  virtual void Row(const std::vector<ResultCell>& row) = 0;
  virtual void End() {}
};
std::unique_ptr<ResultRowWriter> MakeResultRowWriter(OutputFormat format, FILE* out);

// Writes `columns` and `rows` exactly as WriteQueryResult writes a
// statement's result (sluice report prints its sections with it).
void WriteResultRows(const std::vector<std::string>& columns,
                     const std::vector<std::vector<ResultCell>>& rows, OutputFormat format, FILE* out);

// What goes between two results printed one after the other: a blank line
// ("\r\n" in csv), nothing in json, where every line is a row.
const char* ResultSeparator(OutputFormat format);

// The shortest text that reads back as `value`, as described above.
std::string FormatReal(double value);

// `value` as a JSON string, quoted, appended to `out`: bytes that are not
// UTF-8 become U+FFFD, control characters are escaped.
void AppendJsonString(std::string_view value, std::string& out);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_QUERY_OUTPUT_H_
