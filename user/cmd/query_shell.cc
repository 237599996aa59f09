#include "user/cmd/query_shell.h"

#include <signal.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <sstream>

#include "shm/base/string_util.h"
#include "user/query/engine/sql_statements.h"
#include "user/query/engine/stdlib/stdlib_modules.h"

namespace sluice {
namespace {

constexpr char kShellHelp[] =
    ".tables            the tables and views\n"
    ".modules           the modules INCLUDE PERFETTO MODULE takes\n"
    ".schema [TABLE]    the columns and types of TABLE; all tables without one\n"
    ".format [FORMAT]   table, csv, tsv or json; the current one without FORMAT\n"
    ".help              this list\n"
    ".quit, .exit       leave (Ctrl-D too)\n"
    "Anything else is SQL, run at the ';' that ends it; it may span lines.\n";

constexpr char kPrompt[] = "sluice> ";
constexpr char kContinuationPrompt[] = "   ...> ";

// The database whose statement Ctrl-C interrupts: set only while a
// statement runs on a terminal. Written by the main thread, read by the
// SIGINT handler on the same thread; sqlite3_interrupt may be called from a
// signal handler (the sqlite3 shell does it).
std::atomic<sqlite3*> g_interruptible_db{nullptr};

void InterruptStatement(int) {
  if (sqlite3* db = g_interruptible_db.load(std::memory_order_relaxed)) sqlite3_interrupt(db);
}

// SIGINT interrupts the statement of `db` while this lives.
class InterruptOnSigint {
 public:
  explicit InterruptOnSigint(sqlite3* db) {
    g_interruptible_db.store(db, std::memory_order_relaxed);
    struct sigaction action = {};
    action.sa_handler = InterruptStatement;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_);
  }
  ~InterruptOnSigint() {
    sigaction(SIGINT, &previous_, nullptr);
    g_interruptible_db.store(nullptr, std::memory_order_relaxed);
  }

 private:
  struct sigaction previous_ = {};
};

std::vector<std::string> SplitWords(std::string_view line) {
  std::vector<std::string> words;
  std::istringstream stream{std::string(line)};
  for (std::string word; stream >> word;) words.push_back(word);
  return words;
}

// A table name as typed after .schema: quotes around it are not part of it.
std::string Unquote(std::string name) {
  if (name.size() >= 2 && (name.front() == '"' || name.front() == '\'' || name.front() == '`') &&
      name.back() == name.front()) {
    return name.substr(1, name.size() - 2);
  }
  return name;
}

}  // namespace

QueryShell::QueryShell(sqlite3* db, std::vector<std::string> engine_tables, OutputFormat format,
                       FILE* out, FILE* err, SqlDialect* dialect)
    : db_(db), dialect_(dialect), engine_tables_(std::move(engine_tables)), format_(format), out_(out), err_(err) {}

void QueryShell::Error(const std::string& message) {
  fflush(out_);  // Keep the error after the rows printed before it.
  fprintf(err_, "sluice query: %s\n", message.c_str());
  fflush(err_);
  failed_ = true;
}

int QueryShell::Run(LineReader& reader) {
  const bool interactive = reader.interactive();
  if (interactive) fputs("sluice query shell: SQL ending in ';', .help for commands, Ctrl-D to leave\n", out_);
  std::string entry;
  int line_number = 0;
  int entry_first_line = 1;
  for (;;) {
    std::optional<std::string> line = reader.ReadLine(entry.empty() ? kPrompt : kContinuationPrompt);
    if (!line) break;
    line_number++;
    if (entry.empty()) {
      const std::string_view trimmed = TrimWhitespace(*line);
      if (trimmed.starts_with(".")) {
        reader.AddHistory(std::string(trimmed));
        if (!RunDotCommand(std::string(trimmed))) return failed_ ? 1 : 0;
        fflush(out_);
        continue;
      }
      entry_first_line = line_number;
    }
    entry += *line;
    entry += '\n';
    if (SkipSqlSeparators(entry, 0) == entry.size()) {
      entry.clear();  // Blank lines and comments only.
      continue;
    }
    if (!sqlite3_complete(entry.c_str())) continue;
    entry.pop_back();
    reader.AddHistory(entry);
    RunSql(entry, interactive ? 1 : entry_first_line, interactive);
    entry.clear();
  }
  if (!entry.empty()) RunSql(entry, interactive ? 1 : entry_first_line, interactive);
  if (interactive) fputc('\n', out_);  // Ctrl-D leaves the cursor after the prompt.
  fflush(out_);
  return failed_ ? 1 : 0;
}

void QueryShell::RunSql(const std::string& sql, int first_line, bool interactive) {
  std::optional<InterruptOnSigint> interrupt;
  if (interactive) interrupt.emplace(db_);
  bool printed = false;
  Status status = RunSqlScript(
      db_, sql,
      [&](const SqlStatement& statement) {
        if (printed && sqlite3_column_count(statement.stmt) > 0)
          fputs(ResultSeparator(format_), out_);
        printed = printed || sqlite3_column_count(statement.stmt) > 0;
        return WriteQueryResult(statement.stmt, format_, out_);
      },
      first_line, dialect_);
  if (!status.ok()) Error(status.message());
  fflush(out_);
}

bool QueryShell::RunDotCommand(const std::string& line) {
  std::string text = line;
  while (!text.empty() && (text.back() == ';' || text.back() == ' ')) text.pop_back();
  const std::vector<std::string> words = SplitWords(text);
  const std::string& command = words[0];
  if (command == ".quit" || command == ".exit") return false;
  if (command == ".help") {
    fputs(kShellHelp, out_);
  } else if (command == ".tables") {
    for (const std::string& table : AllTables()) fprintf(out_, "%s\n", table.c_str());
  } else if (command == ".modules") {
    for (const StdlibModule& m : StdlibModules())
      fprintf(out_, "%-40s %s\n", m.name.c_str(), m.Description().c_str());
  } else if (command == ".schema") {
    if (words.size() > 2) Error(".schema takes one table name (.tables lists them)");
    else if (words.size() == 2) ShowSchema(Unquote(words[1]));
    else ShowAllSchemas();
  } else if (command == ".format") {
    if (words.size() == 1) {
      fprintf(out_, "%s\n", OutputFormatName(format_));
    } else if (std::optional<OutputFormat> format = ParseOutputFormat(words[1]);
               format && words.size() == 2) {
      format_ = *format;
    } else {
      Error("unknown format '" + Join({words.begin() + 1, words.end()}, " ") +
            "': use table, csv, tsv or json");
    }
  } else {
    Error("unknown command '" + command + "' (.help lists the commands)");
  }
  return true;
}

std::vector<std::string> QueryShell::AllTables() {
  std::vector<std::string> tables = engine_tables_;
  // What the session created (CREATE TABLE / VIEW, temporary or not).
  sqlite3_stmt* stmt = nullptr;
  const char* sql =
      "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') "
      "AND name NOT LIKE 'sqlite_%' UNION "
      "SELECT name FROM sqlite_temp_schema WHERE type IN ('table', 'view') "
      "AND name NOT LIKE 'sqlite_%' ORDER BY name";
  if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) {
    Error(std::string("cannot list the tables: ") + sqlite3_errmsg(db_));
    return tables;
  }
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    const auto* name = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    if (name && std::find(tables.begin(), tables.end(), name) == tables.end())
      tables.push_back(name);
  }
  sqlite3_finalize(stmt);
  return tables;
}

void QueryShell::ShowSchema(const std::string& table) {
  sqlite3_stmt* stmt = nullptr;
  // pragma_table_info leaves out the hidden columns of virtual tables (the
  // arguments of table-valued functions), which SELECT * does not show.
  const char* sql = "SELECT name AS \"column\", type FROM pragma_table_info(?1)";
  if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) {
    Error(std::string("cannot read the schema: ") + sqlite3_errmsg(db_));
    return;
  }
  sqlite3_bind_text(stmt, 1, table.c_str(), -1, SQLITE_TRANSIENT);
  // Step once to see whether the table exists before printing a header.
  const int rc = sqlite3_step(stmt);
  if (rc == SQLITE_DONE) {
    Error("no table or view named '" + table + "' (.tables lists them)");
  } else if (rc != SQLITE_ROW) {
    Error(std::string("cannot read the schema of ") + table + ": " + sqlite3_errmsg(db_));
  } else {
    sqlite3_reset(stmt);
    Status status = WriteQueryResult(stmt, format_, out_);
    if (!status.ok()) Error("cannot read the schema of " + table + ": " + status.message());
  }
  sqlite3_finalize(stmt);
}

void QueryShell::ShowAllSchemas() {
  sqlite3_stmt* stmt = nullptr;
  const char* sql = "SELECT name, type FROM pragma_table_info(?1)";
  if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) {
    Error(std::string("cannot read the schema: ") + sqlite3_errmsg(db_));
    return;
  }
  for (const std::string& table : AllTables()) {
    sqlite3_reset(stmt);
    sqlite3_bind_text(stmt, 1, table.c_str(), -1, SQLITE_TRANSIENT);
    std::vector<std::string> columns;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      const auto* name = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
      const auto* type = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1));
      std::string column = name ? name : "";
      if (type && *type) column += std::string(" ") + type;
      columns.push_back(column);
    }
    fprintf(out_, "%s(%s)\n", table.c_str(), Join(columns, ", ").c_str());
  }
  sqlite3_finalize(stmt);
}

}  // namespace sluice
