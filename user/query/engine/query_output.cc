#include "user/query/engine/query_output.h"

#include <sqlite3.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>
#include <vector>

namespace sluice {
namespace {

// Output is gathered here and handed to stdio in blocks.
constexpr size_t kFlushBytes = 64 * 1024;

// Numbers formatted, text as stored, blobs as X'..'.
using Cell = ResultCell;
static_assert(SQLITE_NULL == 5, "ResultCell's default type is SQLITE_NULL");

}  // namespace

void ReadResultCell(sqlite3_stmt* stmt, int column, ResultCell* cell) {
  cell->type = sqlite3_column_type(stmt, column);
  cell->text.clear();
  switch (cell->type) {
    case SQLITE_INTEGER: {
      char buf[24];
      const std::to_chars_result result =
          std::to_chars(buf, buf + sizeof(buf), sqlite3_column_int64(stmt, column));
      cell->text.assign(buf, result.ptr);
      break;
    }
    case SQLITE_FLOAT:
      cell->text = FormatReal(sqlite3_column_double(stmt, column));
      break;
    case SQLITE_TEXT: {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
      if (text) cell->text.assign(text, static_cast<size_t>(sqlite3_column_bytes(stmt, column)));
      break;
    }
    case SQLITE_BLOB: {
      static constexpr char kHex[] = "0123456789abcdef";
      const auto* bytes = static_cast<const unsigned char*>(sqlite3_column_blob(stmt, column));
      const int size = sqlite3_column_bytes(stmt, column);
      cell->text = "X'";
      for (int i = 0; i < size; i++) {
        cell->text += kHex[bytes[i] >> 4];
        cell->text += kHex[bytes[i] & 15];
      }
      cell->text += '\'';
      break;
    }
    default:
      break;
  }
}

namespace {

bool IsNumber(const Cell& cell) { return cell.type == SQLITE_INTEGER || cell.type == SQLITE_FLOAT; }

// Collects output and writes it to the FILE in blocks.
class OutputBuffer {
 public:
  explicit OutputBuffer(FILE* out) : out_(out) {}
  ~OutputBuffer() { Flush(); }
  std::string& text() { return text_; }
  void MaybeFlush() {
    if (text_.size() >= kFlushBytes) Flush();
  }
  void Flush() {
    if (!text_.empty()) fwrite(text_.data(), 1, text_.size(), out_);
    text_.clear();
  }

 private:
  FILE* out_;
  std::string text_;
};

class ResultWriter : public ResultRowWriter {
 public:
  explicit ResultWriter(FILE* out) : buffer_(out) {}

 protected:
  std::string& out() { return buffer_.text(); }
  void RowDone() { buffer_.MaybeFlush(); }

 private:
  OutputBuffer buffer_;
};

// ---- csv -------------------------------------------------------------------

bool NeedsCsvQuotes(std::string_view value) {
  // A plain loop: find_first_of calls memchr once per character.
  for (char c : value) {
    if (c == ',' || c == '"' || c == '\r' || c == '\n') return true;
  }
  return false;
}

void AppendCsvField(std::string_view value, std::string& out) {
  if (!NeedsCsvQuotes(value)) {
    out += value;
    return;
  }
  out += '"';
  for (char c : value) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

// ---- tsv -------------------------------------------------------------------

void AppendTsvField(std::string_view value, std::string& out) {
  for (char c : value) {
    switch (c) {
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\\': out += "\\\\"; break;
      default: out += c;
    }
  }
}

// csv and tsv: a header line, then a line per row, fields between
// separators, each written by `append` (NULL is empty text: an empty field).
class DelimitedWriter : public ResultWriter {
 public:
  using AppendField = void (*)(std::string_view value, std::string& out);
  DelimitedWriter(FILE* out, char separator, const char* line_end, AppendField append)
      : ResultWriter(out), separator_(separator), line_end_(line_end), append_(append) {}
  void Header(const std::vector<std::string>& names) override {
    for (size_t i = 0; i < names.size(); i++) {
      if (i) out() += separator_;
      append_(names[i], out());
    }
    out() += line_end_;
  }
  void Row(const std::vector<Cell>& row) override {
    for (size_t i = 0; i < row.size(); i++) {
      if (i) out() += separator_;
      append_(row[i].text, out());
    }
    out() += line_end_;
    RowDone();
  }

 private:
  const char separator_;
  const char* const line_end_;
  const AppendField append_;
};

// ---- json ------------------------------------------------------------------

// The length of the valid UTF-8 sequence at the start of `s`, 0 if it is not
// one (bad lead byte, missing continuation, overlong form, surrogate, or past
// U+10FFFF).
size_t Utf8SequenceLength(std::string_view s) {
  const auto b0 = static_cast<unsigned char>(s[0]);
  size_t length;
  uint32_t code;
  if (b0 < 0x80) return 1;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    length = 2;
    code = b0 & 0x1f;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    length = 3;
    code = b0 & 0x0f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    length = 4;
    code = b0 & 0x07;
  } else {
    return 0;
  }
  if (s.size() < length) return 0;
  for (size_t i = 1; i < length; i++) {
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b & 0xc0) != 0x80) return 0;
    code = (code << 6) | (b & 0x3f);
  }
  if (length == 3 && (code < 0x800 || (code >= 0xd800 && code <= 0xdfff))) return 0;
  if (length == 4 && (code < 0x10000 || code > 0x10ffff)) return 0;
  return length;
}

}  // namespace

void AppendJsonString(std::string_view value, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  while (!value.empty()) {
    const auto c = static_cast<unsigned char>(value[0]);
    size_t length = Utf8SequenceLength(value);
    if (length == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD REPLACEMENT CHARACTER for one bad byte.
      length = 1;
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += value.substr(0, length);
    }
    value.remove_prefix(length);
  }
  out += '"';
}

namespace {

// Keys for the objects: the column names, a repeated one suffixed ":N".
std::vector<std::string> UniqueNames(const std::vector<std::string>& names) {
  std::vector<std::string> unique;
  for (const std::string& name : names) {
    std::string candidate = name;
    for (int n = 1; std::find(unique.begin(), unique.end(), candidate) != unique.end(); n++)
      candidate = name + ":" + std::to_string(n);
    unique.push_back(candidate);
  }
  return unique;
}

class JsonWriter : public ResultWriter {
 public:
  using ResultWriter::ResultWriter;
  void Header(const std::vector<std::string>& names) override {
    for (const std::string& name : UniqueNames(names)) {
      std::string key;
      AppendJsonString(name, key);
      keys_.push_back(key + ":");
    }
  }
  void Row(const std::vector<Cell>& row) override {
    out() += '{';
    for (size_t i = 0; i < row.size(); i++) {
      if (i) out() += ',';
      out() += keys_[i];
      const Cell& cell = row[i];
      if (cell.type == SQLITE_NULL) {
        out() += "null";
      } else if (cell.type == SQLITE_INTEGER) {
        out() += cell.text;
      } else if (cell.type == SQLITE_FLOAT) {
        if (cell.text == "inf") out() += "9e999";
        else if (cell.text == "-inf") out() += "-9e999";
        else if (cell.text == "nan") out() += "null";
        else out() += cell.text;
      } else {
        AppendJsonString(cell.text, out());
      }
    }
    out() += "}\n";
    RowDone();
  }

 private:
  std::vector<std::string> keys_;  // Quoted and escaped, with the ':'.
};

// ---- table -----------------------------------------------------------------

// `value` with control bytes written as escapes, so a cell stays on its line.
std::string TableText(std::string_view value) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') text += "\\n";
    else if (c == '\r') text += "\\r";
    else if (c == '\t') text += "\\t";
    else if (c < 0x20 || c == 0x7f) (text += "\\x", text += kHex[c >> 4], text += kHex[c & 15]);
    else text += ch;
  }
  return text;
}

bool HasControlBytes(std::string_view value) {
  for (char c : value) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
  }
  return false;
}

// Columns on a terminal: one per UTF-8 character (every byte that is not a
// continuation byte). East Asian wide characters take two columns on most
// terminals and are counted as one: such a table is a little ragged.
size_t DisplayWidth(std::string_view text) {
  size_t width = 0;
  for (char c : text) width += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return width;
}

class TableWriter : public ResultWriter {
 public:
  using ResultWriter::ResultWriter;
  void Header(const std::vector<std::string>& names) override {
    for (const std::string& name : names) names_.push_back(TableText(name));
  }
  void Row(const std::vector<Cell>& row) override {
    // Reuses shown_'s strings once the widths are fixed (pending_ keeps its own).
    shown_.resize(row.size());
    for (size_t i = 0; i < row.size(); i++) {
      shown_[i].type = row[i].type;
      if (row[i].type == SQLITE_NULL) shown_[i].text = "[NULL]";
      else if (IsNumber(row[i]) || !HasControlBytes(row[i].text)) shown_[i].text = row[i].text;
      else shown_[i].text = TableText(row[i].text);
    }
    if (widths_.empty()) {
      pending_.push_back(shown_);
      if (pending_.size() >= kTableWidthRows) FixWidths();
      return;
    }
    WriteRow(shown_);
  }
  void End() override {
    if (widths_.empty()) FixWidths();
  }

 private:
  // Widths and alignments from the header and the rows held so far; writes
  // the header, the rule and those rows.
  void FixWidths() {
    const size_t columns = names_.size();
    widths_.assign(columns, 0);
    right_.assign(columns, false);
    std::vector<bool> decided(columns, false);
    for (size_t i = 0; i < columns; i++) widths_[i] = std::max<size_t>(1, DisplayWidth(names_[i]));
    for (const std::vector<Cell>& row : pending_) {
      for (size_t i = 0; i < columns; i++) {
        widths_[i] = std::max(widths_[i], DisplayWidth(row[i].text));
        // A column whose first non-NULL value is a number reads as numeric:
        // its header is right-aligned over the numbers.
        if (!decided[i] && row[i].type != SQLITE_NULL) {
          decided[i] = true;
          right_[i] = IsNumber(row[i]);
        }
      }
    }
    for (size_t i = 0; i < columns; i++) {
      if (i) out() += "  ";
      Pad(names_[i], widths_[i], right_[i], i + 1 == columns);
    }
    out() += '\n';
    for (size_t i = 0; i < columns; i++) {
      if (i) out() += "  ";
      out().append(widths_[i], '-');
    }
    out() += '\n';
    for (const std::vector<Cell>& row : pending_) WriteRow(row);
    pending_.clear();
    pending_.shrink_to_fit();
  }

  void WriteRow(const std::vector<Cell>& row) {
    for (size_t i = 0; i < row.size(); i++) {
      if (i) out() += "  ";
      // Numbers to the right, text to the left, NULL as its column.
      const bool right = IsNumber(row[i]) || (row[i].type == SQLITE_NULL && right_[i]);
      Pad(row[i].text, widths_[i], right, i + 1 == row.size());
    }
    out() += '\n';
    RowDone();
  }

  // Writes `text` in a field `width` wide; no trailing spaces on a line.
  void Pad(const std::string& text, size_t width, bool right, bool last) {
    const size_t shown = DisplayWidth(text);
    const size_t fill = shown < width ? width - shown : 0;
    if (right) out().append(fill, ' ');
    out() += text;
    if (!right && !last) out().append(fill, ' ');
  }

  std::vector<std::string> names_;
  std::vector<Cell> shown_;
  std::vector<std::vector<Cell>> pending_;
  std::vector<size_t> widths_;  // Empty until fixed.
  std::vector<bool> right_;
};

std::unique_ptr<ResultRowWriter> MakeWriter(OutputFormat format, FILE* out) {
  switch (format) {
    case OutputFormat::kCsv: return std::make_unique<DelimitedWriter>(out, ',', "\r\n", AppendCsvField);
    case OutputFormat::kTsv: return std::make_unique<DelimitedWriter>(out, '\t', "\n", AppendTsvField);
    case OutputFormat::kJson: return std::make_unique<JsonWriter>(out);
    case OutputFormat::kTable: break;
  }
  return std::make_unique<TableWriter>(out);
}

}  // namespace

std::optional<OutputFormat> ParseOutputFormat(std::string_view name) {
  if (name == "table") return OutputFormat::kTable;
  if (name == "csv") return OutputFormat::kCsv;
  if (name == "tsv") return OutputFormat::kTsv;
  if (name == "json") return OutputFormat::kJson;
  return std::nullopt;
}

const char* OutputFormatName(OutputFormat format) {
  switch (format) {
    case OutputFormat::kCsv: return "csv";
    case OutputFormat::kTsv: return "tsv";
    case OutputFormat::kJson: return "json";
    case OutputFormat::kTable: break;
  }
  return "table";
}

const char* ResultSeparator(OutputFormat format) {
  switch (format) {
    case OutputFormat::kCsv: return "\r\n";
    case OutputFormat::kJson: return "";
    case OutputFormat::kTsv:
    case OutputFormat::kTable: break;
  }
  return "\n";
}

std::string FormatReal(double value) {
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (std::isnan(value)) return "nan";  // SQLite stores NaN as NULL: not seen.
  char buf[64];
  const std::to_chars_result result = std::to_chars(buf, buf + sizeof(buf), value);
  std::string text(buf, result.ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

Status WriteQueryResult(sqlite3_stmt* stmt, OutputFormat format, FILE* out) {
  const int columns = sqlite3_column_count(stmt);
  std::unique_ptr<ResultRowWriter> writer;
  if (columns > 0) {
    writer = MakeWriter(format, out);
    std::vector<std::string> names;
    for (int i = 0; i < columns; i++) {
      const char* name = sqlite3_column_name(stmt, i);
      names.push_back(name ? name : "");
    }
    writer->Header(names);
  }
  std::vector<Cell> row(static_cast<size_t>(columns));
  for (;;) {
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) {
      if (writer) writer->End();
      return Status::Error(sqlite3_errmsg(sqlite3_db_handle(stmt)));
    }
    if (!writer) continue;
    for (int i = 0; i < columns; i++) ReadResultCell(stmt, i, &row[static_cast<size_t>(i)]);
    writer->Row(row);
  }
  if (writer) writer->End();
  return Status::Ok();
}

std::unique_ptr<ResultRowWriter> MakeResultRowWriter(OutputFormat format, FILE* out) {
  return MakeWriter(format, out);
}

void WriteResultRows(const std::vector<std::string>& columns,
                     const std::vector<std::vector<ResultCell>>& rows, OutputFormat format, FILE* out) {
  std::unique_ptr<ResultRowWriter> writer = MakeWriter(format, out);
  writer->Header(columns);
  for (const std::vector<ResultCell>& row : rows) writer->Row(row);
  writer->End();
}

}  // namespace sluice
