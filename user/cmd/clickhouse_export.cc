#include "user/cmd/clickhouse_export.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>

#include "shm/base/errno_message.h"
#include "user/query/engine/query_engine.h"

namespace sluice {
namespace {

// The rows of one INSERT chunk: libcurl sends them while the next are made.
constexpr size_t kChunkBytes = 256 * 1024;

// The engine's views leave some columns without a declared type (a view
// column made of an expression has none). These hold integers (ids, cpu,
// flags); any other untyped column (name, description) holds text.
const std::set<std::string>& UntypedIntegerColumns() {
  static const std::set<std::string> names = {"id",        "raw_id",          "label_index", "parent_id",
                                              "machine_id", "perf_session_id", "cpu",         "is_timebase"};
  return names;
}

using Statement = std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)>;

StatusOr<Statement> Prepare(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK)
    return Status::Error("cannot read the trace's tables (" + std::string(sqlite3_errmsg(db)) + ")");
  return Statement(stmt, sqlite3_finalize);
}

// `text` in ClickHouse's TabSeparated escaping.
void AppendEscaped(std::string* out, const char* text, int size) {
  for (int i = 0; i < size; ++i) {
    switch (text[i]) {
      case '\\': *out += "\\\\"; break;
      case '\t': *out += "\\t"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\0': *out += "\\0"; break;
      default: *out += text[i];
    }
  }
}

template <typename T>
void AppendNumber(std::string* out, T value) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out->append(buf, end);
}

// 64-bit FNV-1a of the file: the uuid of a trace whose metadata has none.
StatusOr<std::string> FileHashUuid(const std::string& path) {
  std::unique_ptr<FILE, decltype(&fclose)> file(fopen(path.c_str(), "rb"), fclose);
  if (!file) return Status::Error(WithErrno("cannot open " + path, errno));
  uint64_t hash = 0xcbf29ce484222325ull;
  std::vector<unsigned char> buf(1 << 20);
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), file.get())) > 0;) {
    for (size_t i = 0; i < n; ++i) hash = (hash ^ buf[i]) * 0x100000001b3ull;
  }
  if (ferror(file.get())) return Status::Error(WithErrno("cannot read " + path, errno));
  char uuid[40];
  snprintf(uuid, sizeof(uuid), "00000000-0000-0000-%04x-%012llx", static_cast<unsigned>(hash >> 48),
           static_cast<unsigned long long>(hash & 0xffffffffffffull));
  return std::string(uuid);
}

// The first row of a one-row query as text values ("" for NULL).
StatusOr<std::vector<std::string>> FirstRow(sqlite3* db, const std::string& sql) {
  SLUICE_ASSIGN_OR_RETURN(Statement stmt, Prepare(db, sql));
  std::vector<std::string> values;
  if (sqlite3_step(stmt.get()) == SQLITE_ROW) {
    for (int i = 0; i < sqlite3_column_count(stmt.get()); ++i) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), i));
      values.push_back(text ? text : "");
    }
  }
  return values;
}

// The rows of a two-column TabSeparated answer (names only: no escapes).
std::vector<std::pair<std::string, std::string>> TwoColumns(const std::string& tsv) {
  std::vector<std::pair<std::string, std::string>> rows;
  for (size_t start = 0; start < tsv.size();) {
    size_t end = tsv.find('\n', start);
    if (end == std::string::npos) end = tsv.size();
    const std::string line = tsv.substr(start, end - start);
    start = end + 1;
    const size_t tab = line.find('\t');
    if (tab != std::string::npos) rows.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return rows;
}

}  // namespace

const std::vector<std::string>& ClickHouseExportedTables() {
  static const std::vector<std::string> tables = {
      "sched",        "thread_state",      "thread",           "process",
      "slice",        "counter",           "track",            "thread_track",
      "process_track", "cpu_track",        "counter_track",    "cpu_counter_track",
      "process_counter_track", "thread_counter_track", "perf_counter_track", "args",
      "stats",        "metadata",          "machine"};
  return tables;
}

std::string ClickHouseExporter::Qualified(const std::string& table) const {
  return ClickHouseClient::QuoteName(client_->database()) + "." + ClickHouseClient::QuoteName(table);
}

Status ClickHouseExporter::AddMissingColumns(const Table& table, const std::string& name,
                                             const std::map<std::string, std::vector<std::string>>& existing) {
  auto found = existing.find(name);
  if (found == existing.end()) return Status::Ok();  // Created just now, complete.
  const std::set<std::string> has(found->second.begin(), found->second.end());
  for (const Column& column : table.columns) {
    if (has.count(column.name)) continue;
    SLUICE_RETURN_IF_ERROR(client_->Query("ALTER TABLE " + Qualified(name) + " ADD COLUMN " +
                                          ClickHouseClient::QuoteName(column.name) + " " + column.type)
                               .status());
  }
  return Status::Ok();
}

Status ClickHouseExporter::EnsureSchema(const QueryEngine& engine) {
  if (schema_ready_) return Status::Ok();
  tables_.clear();
  for (const std::string& name : ClickHouseExportedTables()) {
    SLUICE_ASSIGN_OR_RETURN(Statement info,
                            Prepare(engine.db(), "SELECT name, type FROM pragma_table_info('" + name + "')"));
    Table table{name, {}, ""};
    while (sqlite3_step(info.get()) == SQLITE_ROW) {
      Column column;
      column.name = reinterpret_cast<const char*>(sqlite3_column_text(info.get(), 0));
      const auto* declared = reinterpret_cast<const char*>(sqlite3_column_text(info.get(), 1));
      std::string type = declared ? declared : "";
      for (char& c : type) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
      // SQLite's affinity rules, and the untyped view columns above.
      if (type.find("INT") != std::string::npos ||
          (type.empty() && UntypedIntegerColumns().count(column.name)))
        column.kind = Column::Kind::kInt;
      else if (type.find("REAL") != std::string::npos || type.find("FLOA") != std::string::npos ||
               type.find("DOUB") != std::string::npos)
        column.kind = Column::Kind::kReal;
      else
        column.kind = Column::Kind::kText;
      table.columns.push_back(column);
    }
    if (table.columns.empty()) continue;  // Not a table of this sluice's engine.
    bool has_ts = false, has_id = false;
    for (const Column& column : table.columns) {
      has_ts |= column.name == "ts";
      has_id |= column.name == "id";
    }
    const std::string key = has_ts ? "ts" : has_id ? "id" : "";
    table.order_by = key.empty() ? "trace_uuid" : "(trace_uuid, " + key + ")";
    for (Column& column : table.columns) {
      const char* base = column.kind == Column::Kind::kInt    ? "Int64"
                         : column.kind == Column::Kind::kReal ? "Float64"
                                                              : "String";
      // ClickHouse refuses a Nullable sort key; the key columns are never NULL.
      column.type = column.name == key ? base : std::string("Nullable(") + base + ")";
    }
    tables_.push_back(std::move(table));
  }
  SLUICE_RETURN_IF_ERROR(client_->CreateDatabase());
  // The columns of the tables that exist already, to add what they lack.
  SLUICE_ASSIGN_OR_RETURN(std::string listed,
                          client_->Query("SELECT table, name FROM system.columns WHERE database = " +
                                         ClickHouseClient::Quote(client_->database()) + " FORMAT TabSeparated"));
  std::map<std::string, std::vector<std::string>> existing;
  for (const auto& [table, column] : TwoColumns(listed)) existing[table].push_back(column);
  // A load acts on partitions of local tables: a Distributed (or other)
  // table of the same name would forward the staging rows at once and
  // refuse REPLACE PARTITION.
  SLUICE_ASSIGN_OR_RETURN(std::string engines,
                          client_->Query("SELECT name, engine FROM system.tables WHERE database = " +
                                         ClickHouseClient::Quote(client_->database()) + " FORMAT TabSeparated"));
  for (const auto& [name, engine] : TwoColumns(engines)) {
    if (engine.ends_with("MergeTree")) continue;
    for (const Table& table : tables_) {
      if (name == table.name || name == StagingTable(table.name) || name == "traces")
        return Status::Error(client_->database() + "." + name + " is a " + engine +
                             " table, not a MergeTree: point the URL at the database of the local tables "
                             "(docs/FLEET.md, 'A ClickHouse cluster')");
    }
  }
  for (const Table& table : tables_) {
    std::string columns = "`trace_uuid` String, `machine` String";
    for (const Column& column : table.columns)
      columns += ", " + ClickHouseClient::QuoteName(column.name) + " " + column.type;
    SLUICE_RETURN_IF_ERROR(client_->Query("CREATE TABLE IF NOT EXISTS " + Qualified(table.name) + " (" + columns +
                                          ") ENGINE = MergeTree PARTITION BY trace_uuid ORDER BY " + table.order_by)
                               .status());
    SLUICE_RETURN_IF_ERROR(AddMissingColumns(table, table.name, existing));
    const std::string staging = StagingTable(table.name);
    SLUICE_RETURN_IF_ERROR(
        client_->Query("CREATE TABLE IF NOT EXISTS " + Qualified(staging) + " AS " + Qualified(table.name)).status());
    SLUICE_RETURN_IF_ERROR(AddMissingColumns(table, staging, existing));
  }
  SLUICE_RETURN_IF_ERROR(
      client_
          ->Query("CREATE TABLE IF NOT EXISTS " + Qualified("traces") +
                  " (`trace_uuid` String, `machine` String, `path` String, `size_bytes` Int64, `start_ts` Int64,"
                  " `end_ts` Int64, `start_realtime_ns` Int64,"
                  " `start_time` DateTime DEFAULT toDateTime(intDiv(start_realtime_ns, 1000000000)),"
                  " `loaded_at` DateTime DEFAULT now(), `rows` Int64)"
                  " ENGINE = MergeTree ORDER BY trace_uuid")
          .status());
  schema_ready_ = true;
  return Status::Ok();
}

StatusOr<uint64_t> ClickHouseExporter::InsertRows(const QueryEngine& engine, const Table& table,
                                                  const std::string& prefix) {
  std::string select, names = "`trace_uuid`, `machine`";
  for (const Column& column : table.columns) {
    select += (select.empty() ? "" : ", ") + std::string("\"") + column.name + "\"";
    names += ", " + ClickHouseClient::QuoteName(column.name);
  }
  SLUICE_ASSIGN_OR_RETURN(Statement stmt, Prepare(engine.db(), "SELECT " + select + " FROM " + table.name));
  uint64_t rows = 0;
  bool done = false;
  const ClickHouseClient::RowSource next_rows = [&](std::string* out) -> StatusOr<bool> {
    while (!done && out->size() < kChunkBytes) {
      const int rc = sqlite3_step(stmt.get());
      if (rc == SQLITE_DONE) {
        done = true;
        break;
      }
      if (rc != SQLITE_ROW)
        return Status::Error("cannot read table " + table.name + " of the trace (" +
                             sqlite3_errmsg(engine.db()) + ")");
      *out += prefix;
      for (int i = 0; i < static_cast<int>(table.columns.size()); ++i) {
        const Column& column = table.columns[i];
        *out += '\t';
        if (sqlite3_column_type(stmt.get(), i) == SQLITE_NULL) {
          if (!column.type.starts_with("Nullable"))
            return Status::Error("table " + table.name + " has a NULL " + column.name +
                                 ", the ClickHouse table's sort key: report it as a sluice bug");
          *out += "\\N";
        } else if (column.kind == Column::Kind::kInt) {
          AppendNumber(out, static_cast<int64_t>(sqlite3_column_int64(stmt.get(), i)));
        } else if (column.kind == Column::Kind::kReal) {
          const double value = sqlite3_column_double(stmt.get(), i);
          if (std::isnan(value)) *out += "nan";
          else if (std::isinf(value)) *out += value > 0 ? "inf" : "-inf";
          else AppendNumber(out, value);
        } else {
          const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), i));
          AppendEscaped(out, text, sqlite3_column_bytes(stmt.get(), i));
        }
      }
      *out += '\n';
      ++rows;
    }
    return !done;
  };
  SLUICE_RETURN_IF_ERROR(
      client_->Insert("INSERT INTO " + Qualified(StagingTable(table.name)) + " (" + names + ") FORMAT TabSeparated",
                      next_rows));
  return rows;
}

Status ClickHouseExporter::ForEachStaging(const std::string& uuid, const char* statement) {
  for (const Table& table : tables_) {
    SLUICE_RETURN_IF_ERROR(client_
                               ->Query("ALTER TABLE " + Qualified(StagingTable(table.name)) + " " + statement +
                                       " PARTITION " + ClickHouseClient::Quote(uuid))
                               .status());
  }
  return Status::Ok();
}

StatusOr<ClickHouseTraceLoad> ClickHouseExporter::Load(const QueryEngine& engine, const std::string& path,
                                                       const std::string& machine) {
  SLUICE_RETURN_IF_ERROR(EnsureSchema(engine));
  ClickHouseTraceLoad load;
  SLUICE_ASSIGN_OR_RETURN(std::vector<std::string> uuid,
                          FirstRow(engine.db(), "SELECT str_value FROM metadata WHERE name = 'trace_uuid'"));
  if (!uuid.empty() && !uuid[0].empty()) {
    load.trace_uuid = uuid[0];
  } else {
    SLUICE_ASSIGN_OR_RETURN(load.trace_uuid, FileHashUuid(path));
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return Status::Error("cannot stat " + path);
  const int64_t size = st.st_size;

  // 1. Loaded already? The same uuid with another size is another trace.
  SLUICE_ASSIGN_OR_RETURN(std::string loaded,
                          client_->Query("SELECT size_bytes, path FROM " + Qualified("traces") +
                                         " WHERE trace_uuid = " + ClickHouseClient::Quote(load.trace_uuid) +
                                         " LIMIT 1 FORMAT TabSeparated"));
  if (!loaded.empty()) {
    if (std::stoll(loaded) != size) {
      return Status::Error("trace uuid " + load.trace_uuid + " is in " + client_->database() +
                           ".traces already, loaded from another file (" + loaded.substr(0, loaded.find('\n')) +
                           "): two traces with one uuid; drop its partitions and `traces` row to replace it");
    }
    load.already_loaded = true;
    return load;
  }

  // 2. Into the staging partition, cleared first.
  SLUICE_RETURN_IF_ERROR(ForEachStaging(load.trace_uuid, "DROP"));
  std::string prefix;
  AppendEscaped(&prefix, load.trace_uuid.data(), static_cast<int>(load.trace_uuid.size()));
  prefix += '\t';
  AppendEscaped(&prefix, machine.data(), static_cast<int>(machine.size()));
  for (const Table& table : tables_) {
    StatusOr<uint64_t> rows = InsertRows(engine, table, prefix);
    if (!rows.ok()) {
      (void)ForEachStaging(load.trace_uuid, "DROP");  // Best effort: the next load clears it too.
      return rows.status();
    }
    load.rows += *rows;
    ++load.tables;
  }

  // 3. Visible, table by table.
  for (const Table& table : tables_) {
    Status replaced = client_
                          ->Query("ALTER TABLE " + Qualified(table.name) + " REPLACE PARTITION " +
                                  ClickHouseClient::Quote(load.trace_uuid) + " FROM " +
                                  Qualified(StagingTable(table.name)))
                          .status();
    if (!replaced.ok())
      return Status::Error(replaced.message() + " (some tables hold the trace without its `traces` row: load it "
                                                "again to complete it)");
  }

  // 4. The trace's row, last: the load is complete.
  SLUICE_ASSIGN_OR_RETURN(
      std::vector<std::string> bounds,
      FirstRow(engine.db(),
               "SELECT start_ts, end_ts, start_ts + (SELECT clock_value - ts FROM clock_snapshot WHERE clock_name = "
               "'REALTIME' ORDER BY snapshot_id LIMIT 1) FROM trace_bounds"));
  int64_t start_ts = 0, end_ts = 0, start_realtime = 0;
  if (bounds.size() == 3) {
    start_ts = atoll(bounds[0].c_str());
    end_ts = atoll(bounds[1].c_str());
    // Without a REALTIME clock snapshot: the file was last written at the
    // trace's end.
    start_realtime = !bounds[2].empty() ? atoll(bounds[2].c_str())
                                        : static_cast<int64_t>(st.st_mtime) * 1000000000 - (end_ts - start_ts);
  }
  std::string absolute = path;
  if (char* real = realpath(path.c_str(), nullptr)) {
    absolute = real;
    free(real);
  }
  SLUICE_RETURN_IF_ERROR(
      client_
          ->Query("INSERT INTO " + Qualified("traces") +
                  " (trace_uuid, machine, path, size_bytes, start_ts, end_ts, start_realtime_ns, rows) VALUES (" +
                  ClickHouseClient::Quote(load.trace_uuid) + ", " + ClickHouseClient::Quote(machine) + ", " +
                  ClickHouseClient::Quote(absolute) + ", " + std::to_string(size) + ", " + std::to_string(start_ts) +
                  ", " + std::to_string(end_ts) + ", " + std::to_string(start_realtime) + ", " +
                  std::to_string(load.rows) + ")")
          .status());

  // 5. Staging emptied.
  SLUICE_RETURN_IF_ERROR(ForEachStaging(load.trace_uuid, "DROP"));
  return load;
}

}  // namespace sluice
