// ClickHouseExporter: the tables of imported traces loaded into ClickHouse,
// one database for a fleet's traces (docs/FLEET.md has the schema and the
// queries). Every table keeps its `sluice query` name and columns, with two
// columns first: trace_uuid (the trace's metadata trace_uuid) and machine.
//
// Schema, created when missing (CREATE ... IF NOT EXISTS; columns a newer
// sluice added are added to existing tables):
//   - each table: MergeTree, PARTITION BY trace_uuid, ORDER BY (trace_uuid,
//     ts) when it has ts, else (trace_uuid, id); SQLite's declared types
//     become Int64 (INTEGER), Float64 (REAL), String (TEXT), Nullable but
//     for the sort key;
//   - sluice_staging_<table>: the same, where a load is written first;
//   - traces: one row per loaded trace (uuid, machine, path, size, bounds,
//     wall-clock start), written last.
//
// A load, all or nothing as readers see it (ClickHouse 18.16 has no
// transactions; these are the statements it has that act on a partition
// as one step):
//   1. a trace whose uuid is in `traces` is skipped (loaded already);
//   2. the trace's partition is dropped from every staging table (what a
//      killed earlier load left), then every table's rows are inserted
//      there; a failure drops them again and nothing was visible;
//   3. ALTER TABLE t REPLACE PARTITION uuid FROM sluice_staging_t, table by
//      table (replace, not attach: a load cut short in this step and run
//      again does not duplicate rows);
//   4. the `traces` row; 5. the staging partitions are dropped.
// Only a failure between the first and the last statement of step 3 leaves
// some tables with the trace and no `traces` row; loading it again
// completes it, and queries that must never see such a trace join `traces`.
#ifndef SLUICE_USER_CMD_CLICKHOUSE_EXPORT_H_
#define SLUICE_USER_CMD_CLICKHOUSE_EXPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "shm/base/status.h"
#include "user/cmd/clickhouse_client.h"

namespace sluice {

class QueryEngine;

// What one trace's load did.
struct ClickHouseTraceLoad {
  std::string trace_uuid;
  bool already_loaded = false;  // Its uuid was in `traces`: nothing sent.
  size_t tables = 0;
  uint64_t rows = 0;
};

// The `sluice query` tables a load copies, in load order.
const std::vector<std::string>& ClickHouseExportedTables();

class ClickHouseExporter {
 public:
  explicit ClickHouseExporter(ClickHouseClient* client) : client_(client) {}

  // Loads the trace `engine` imported from `path`, its rows marked with
  // `machine`. The schema is made (or completed) before the first load.
  StatusOr<ClickHouseTraceLoad> Load(const QueryEngine& engine, const std::string& path,
                                     const std::string& machine);

  // Named for tests: the staging table of `table`.
  static std::string StagingTable(const std::string& table) { return "sluice_staging_" + table; }

 private:
  struct Column {
    std::string name;
    std::string type;  // ClickHouse's: Int64, Nullable(Float64), ...
    enum class Kind { kInt, kReal, kText } kind;
  };
  struct Table {
    std::string name;
    std::vector<Column> columns;  // The trace's columns, without trace_uuid and machine.
    std::string order_by;
  };

  Status EnsureSchema(const QueryEngine& engine);
  Status AddMissingColumns(const Table& table, const std::string& name,
                           const std::map<std::string, std::vector<std::string>>& existing);
  StatusOr<uint64_t> InsertRows(const QueryEngine& engine, const Table& table, const std::string& prefix);
  Status ForEachStaging(const std::string& uuid, const char* statement);
  std::string Qualified(const std::string& table) const;

  ClickHouseClient* client_;
  bool schema_ready_ = false;
  std::vector<Table> tables_;
};

}  // namespace sluice

#endif  // SLUICE_USER_CMD_CLICKHOUSE_EXPORT_H_
