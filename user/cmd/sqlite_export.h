// Export: copies tables of a database (the query engine's virtual tables and
// views) into a new SQLite file that any SQLite tool opens without sluice.
//
// VACUUM INTO copies only stored tables, and a virtual table is stored
// nowhere, so each table is copied row by row: the new file is ATTACHed,
// each table created there with the columns and declared types its source
// shows (PRAGMA table_info; a view becomes a plain table) and filled with
// INSERT INTO ... SELECT, all in one transaction.
//
// The file is written under a temporary name next to the destination
// (DEST.XXXXXX), synced, and renamed over DEST only once complete: a failed
// or interrupted export leaves DEST as it was (and removes the temporary
// file unless the process was killed). An existing DEST is replaced only
// when `overwrite` is set.
#ifndef SLUICE_USER_CMD_SQLITE_EXPORT_H_
#define SLUICE_USER_CMD_SQLITE_EXPORT_H_

#include <string>
#include <vector>

#include "shm/base/status.h"

struct sqlite3;

namespace sluice {

struct ExportSummary {
  size_t tables = 0;
  uint64_t rows = 0;
};

// Copies `tables` of `db` into a new SQLite file at `path`. Fails with a
// one-line message naming the table or the file and the fix.
StatusOr<ExportSummary> ExportToSqliteFile(sqlite3* db, const std::vector<std::string>& tables,
                                           const std::string& path, bool overwrite);

// Fails when `path` cannot be the destination: a directory, or an existing
// file without `overwrite`. ExportToSqliteFile checks it first; a caller may
// check before a long import.
Status CheckExportDestination(const std::string& path, bool overwrite);

// `name` as an SQL identifier: in double quotes, inner quotes doubled.
std::string QuoteSqlIdentifier(const std::string& name);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_SQLITE_EXPORT_H_
