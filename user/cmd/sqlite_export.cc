#include "user/cmd/sqlite_export.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "shm/base/errno_message.h"
#include "shm/base/file_util.h"
#include "user/query/engine/sql_statements.h"

namespace sluice {
namespace {

// The attached file's schema name while the export runs.
constexpr char kExportSchema[] = "sluice_export";

struct Column {
  std::string name;
  std::string type;
};

// The columns of table or view `table` as SQLite shows them (hidden columns
// of virtual tables left out); empty when no such table exists.
StatusOr<std::vector<Column>> TableColumns(sqlite3* db, const std::string& table) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT name, type FROM pragma_table_info(?1)", -1, &stmt,
                         nullptr) != SQLITE_OK) {
    return Status::Error(sqlite3_errmsg(db));
  }
  sqlite3_bind_text(stmt, 1, table.c_str(), -1, SQLITE_TRANSIENT);
  std::vector<Column> columns;
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    const auto* name = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    const auto* type = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1));
    columns.push_back({name ? name : "", type ? type : ""});
  }
  Status status = rc == SQLITE_DONE ? Status::Ok() : Status::Error(sqlite3_errmsg(db));
  sqlite3_finalize(stmt);
  if (!status.ok()) return status;
  return columns;
}

// Where `table` lives: "temp" for a temporary table or view, else "main".
// The source must be named with its schema: SQLite looks up an eponymous
// virtual table (a module serving a table without CREATE VIRTUAL TABLE, as
// the query engine's are) only after every schema's stored tables, so an
// unqualified name would find the copy just created in the attached file.
StatusOr<std::string> SourceSchema(sqlite3* db, const std::string& table) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_temp_schema WHERE name = ?1", -1, &stmt,
                         nullptr) != SQLITE_OK) {
    return Status::Error(sqlite3_errmsg(db));
  }
  sqlite3_bind_text(stmt, 1, table.c_str(), -1, SQLITE_TRANSIENT);
  const int rc = sqlite3_step(stmt);
  sqlite3_finalize(stmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Status::Error(sqlite3_errmsg(db));
  return std::string(rc == SQLITE_ROW ? "temp" : "main");
}

// Copies one table into the attached file; the number of rows copied.
StatusOr<uint64_t> CopyTable(sqlite3* db, const std::string& table) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<Column> columns, TableColumns(db, table));
  if (columns.empty()) return Status::Error("no table or view named " + table);
  std::string definitions, names;
  for (const Column& column : columns) {
    if (!names.empty()) {
      definitions += ", ";
      names += ", ";
    }
    definitions += QuoteSqlIdentifier(column.name);
    if (!column.type.empty()) definitions += " " + column.type;
    names += QuoteSqlIdentifier(column.name);
  }
  const std::string target = std::string(kExportSchema) + "." + QuoteSqlIdentifier(table);
  SLUICE_ASSIGN_OR_RETURN(const std::string schema, SourceSchema(db, table));
  const std::string source = schema + "." + QuoteSqlIdentifier(table);
  SLUICE_RETURN_IF_ERROR(ExecSql(db, "CREATE TABLE " + target + " (" + definitions + ")"));
  SLUICE_RETURN_IF_ERROR(
      ExecSql(db, "INSERT INTO " + target + " SELECT " + names + " FROM " + source));
  return static_cast<uint64_t>(sqlite3_changes64(db));
}

// Syncs the file's bytes to disk before it is renamed over the destination.
Status SyncFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error(WithErrno("cannot open " + path, errno));
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  if (rc != 0) return Status::Error(WithErrno("cannot sync " + path, err));
  return Status::Ok();
}

// The temporary file: removed on every path that does not rename it.
class TemporaryFile {
 public:
  explicit TemporaryFile(std::string path) : path_(std::move(path)) {}
  ~TemporaryFile() {
    if (!path_.empty()) unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }
  void Release() { path_.clear(); }

 private:
  std::string path_;
};

}  // namespace

std::string QuoteSqlIdentifier(const std::string& name) {
  std::string quoted = "\"";
  for (char c : name) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

Status CheckExportDestination(const std::string& path, bool overwrite) {
  if (IsDirectory(path)) return Status::Error(path + " is a directory: name a file to export to");
  if (PathExists(path) && !overwrite) {
    return Status::Error(path +
                         " already exists: remove it, name another file, or pass --force to "
                         "replace it");
  }
  return Status::Ok();
}

StatusOr<ExportSummary> ExportToSqliteFile(sqlite3* db, const std::vector<std::string>& tables,
                                           const std::string& path, bool overwrite) {
  SLUICE_RETURN_IF_ERROR(CheckExportDestination(path, overwrite));
  std::string pattern = path + ".XXXXXX";
  const int fd = mkostemp(pattern.data(), O_CLOEXEC);
  if (fd < 0) {
    return Status::Error(WithErrno("cannot create a file next to " + path, errno) +
                         " (is the directory there and writable?)");
  }
  close(fd);
  TemporaryFile temporary(pattern);

  sqlite3_stmt* attach = nullptr;
  const std::string attach_sql = std::string("ATTACH ?1 AS ") + kExportSchema;
  if (sqlite3_prepare_v2(db, attach_sql.c_str(), -1, &attach, nullptr) != SQLITE_OK)
    return Status::Error("cannot export: " + std::string(sqlite3_errmsg(db)));
  sqlite3_bind_text(attach, 1, temporary.path().c_str(), -1, SQLITE_TRANSIENT);
  Status attached = StepToEnd(attach);
  sqlite3_finalize(attach);
  if (!attached.ok())
    return Status::Error("cannot open " + temporary.path() + " for the export: " + attached.message());

  // The journal would only protect the temporary file, which is thrown away
  // on failure anyway; the one fsync below makes it durable before the rename.
  ExportSummary summary;
  Status status = ExecSql(db, std::string("PRAGMA ") + kExportSchema + ".journal_mode = OFF");
  if (status.ok()) status = ExecSql(db, std::string("PRAGMA ") + kExportSchema + ".synchronous = OFF");
  if (status.ok()) status = ExecSql(db, "BEGIN");
  if (!status.ok()) status = Status::Error("cannot export to " + path + ": " + status.message());
  for (size_t i = 0; status.ok() && i < tables.size(); i++) {
    StatusOr<uint64_t> rows = CopyTable(db, tables[i]);
    if (!rows.ok()) {
      status = Status::Error("cannot export table " + tables[i] + " to " + path + ": " +
                             rows.status().message());
      break;
    }
    summary.tables++;
    summary.rows += *rows;
  }
  if (status.ok()) {
    status = ExecSql(db, "COMMIT");
    if (!status.ok()) status = Status::Error("cannot write " + temporary.path() + ": " + status.message());
  } else if (!sqlite3_get_autocommit(db)) {
    (void)ExecSql(db, "ROLLBACK");
  }
  Status detached = ExecSql(db, std::string("DETACH ") + kExportSchema);
  if (!status.ok()) return status;
  if (!detached.ok()) return Status::Error("cannot close " + temporary.path() + ": " + detached.message());
  SLUICE_RETURN_IF_ERROR(SyncFile(temporary.path()));
  // mkstemp made it 0600; a file written by an export is as readable as any
  // other file the user creates.
  const mode_t mask = umask(0);
  umask(mask);
  if (chmod(temporary.path().c_str(), 0666 & ~mask) != 0 ||
      rename(temporary.path().c_str(), path.c_str()) != 0) {
    return Status::Error(WithErrno("cannot rename " + temporary.path() + " to " + path, errno));
  }
  temporary.Release();
  return summary;
}

}  // namespace sluice
