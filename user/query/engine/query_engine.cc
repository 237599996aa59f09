#include "user/query/engine/query_engine.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "user/query/engine/operators/connected_flow.h"
#include "user/query/engine/operators/critical_path.h"
#include "user/query/engine/operators/slice_descendants.h"
#include "user/query/engine/operators/span_join.h"
#include "user/query/engine/percentile_functions.h"
#include "user/query/engine/perfetto_sql/builtin_functions.h"
#include "user/query/engine/perfetto_sql/perfetto_sql.h"
#include "user/query/engine/query_table.h"
#include "user/query/engine/query_tables.h"
#include "user/query/engine/sql_statements.h"
#include "user/query/importer/trace_importer.h"
#include "user/trace/trace_file_reader.h"

namespace sluice {
namespace {

// Views over the tables: Perfetto's aliases and the track views.
constexpr const char* kViews[][2] = {
    {"sched_slice", "SELECT * FROM sched"},
    {"raw", "SELECT * FROM ftrace_event"},
    {"track",
     "SELECT id, name, type, dimension_arg_set_id, NULL AS parent_id, source_arg_set_id, "
     "machine_id, track_group_id FROM __sluice_track"},
    {"thread_track",
     "SELECT id, name, type, NULL AS parent_id, source_arg_set_id, machine_id, utid "
     "FROM __sluice_track WHERE utid IS NOT NULL AND is_counter = 0"},
    {"process_track",
     "SELECT id, name, type, NULL AS parent_id, source_arg_set_id, machine_id, upid "
     "FROM __sluice_track WHERE upid IS NOT NULL AND is_counter = 0"},
    {"counter_track",
     "SELECT id, name, NULL AS parent_id, type, dimension_arg_set_id, source_arg_set_id, "
     "machine_id, unit, NULL AS description FROM __sluice_track WHERE is_counter = 1"},
    {"cpu_counter_track",
     "SELECT id, name, type, NULL AS parent_id, source_arg_set_id, machine_id, unit, "
     "NULL AS description, cpu FROM __sluice_track WHERE cpu IS NOT NULL AND is_counter = 1"},
    {"process_counter_track",
     "SELECT id, name, type, NULL AS parent_id, source_arg_set_id, machine_id, unit, "
     "NULL AS description, upid FROM __sluice_track WHERE upid IS NOT NULL AND is_counter = 1"},
    {"trace_bounds", "SELECT trace_start() AS start_ts, trace_end() AS end_ts"},
    // The host (id 0) and each relayed machine; what SystemInfo said of
    // each is in its metadata rows.
    {"machine",
     "SELECT m.id, m.raw_id, m.name, "
     "(SELECT str_value FROM metadata WHERE name = 'system_name' AND machine_id = m.id) AS sysname, "
     "(SELECT str_value FROM metadata WHERE name = 'system_release' AND machine_id = m.id) AS release, "
     "(SELECT str_value FROM metadata WHERE name = 'system_version' AND machine_id = m.id) AS version, "
     "(SELECT str_value FROM metadata WHERE name = 'system_machine' AND machine_id = m.id) AS arch, "
     "(SELECT int_value FROM metadata WHERE name = 'num_cpus' AND machine_id = m.id) AS num_cpus, "
     "(SELECT str_value FROM metadata WHERE name = 'android_build_fingerprint' AND machine_id = m.id) "
     "AS android_build_fingerprint, "
     "(SELECT str_value FROM metadata WHERE name = 'android_device_manufacturer' AND machine_id = m.id) "
     "AS android_device_manufacturer, "
     "(SELECT int_value FROM metadata WHERE name = 'android_sdk_version' AND machine_id = m.id) "
     "AS android_sdk_version, "
     "(SELECT int_value FROM metadata WHERE name = 'system_ram_bytes' AND machine_id = m.id) AS system_ram_bytes, "
     "(SELECT int_value FROM metadata WHERE name = 'system_ram_gb' AND machine_id = m.id) AS system_ram_gb, "
     "m.id AS label_index FROM __sluice_machine m"},
};

void TraceStart(sqlite3_context* ctx, int, sqlite3_value**) {
  const auto* s = static_cast<const TraceStorage*>(sqlite3_user_data(ctx));
  sqlite3_result_int64(ctx, s->start_ts == kNullInt ? 0 : s->start_ts);
}
void TraceEnd(sqlite3_context* ctx, int, sqlite3_value**) {
  const auto* s = static_cast<const TraceStorage*>(sqlite3_user_data(ctx));
  sqlite3_result_int64(ctx, s->end_ts == kNullInt ? 0 : s->end_ts);
}
void TraceDur(sqlite3_context* ctx, int, sqlite3_value**) {
  const auto* s = static_cast<const TraceStorage*>(sqlite3_user_data(ctx));
  sqlite3_result_int64(ctx, s->start_ts == kNullInt ? 0 : s->end_ts - s->start_ts);
}

}  // namespace

struct QueryEngine::Tables {
  std::vector<std::unique_ptr<QueryTable>> list;
};

QueryEngine::QueryEngine() : storage_(std::make_unique<TraceStorage>()) {}

QueryEngine::~QueryEngine() {
  perfetto_sql_.reset();  // Finalizes its functions' statements first.
  if (db_) sqlite3_close_v2(db_);
}

SqlDialect* QueryEngine::dialect() const { return perfetto_sql_.get(); }

Status QueryEngine::Init() {
  // NOMUTEX: one thread uses the connection; SQLite's default serialized
  // mode cost 9% of a full-table read in mutex calls.
  if (sqlite3_open_v2(":memory:", &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK)
    return Status::Error("sluice query: cannot open an in-memory SQLite database");
  // Sorts and automatic indexes in memory, as the database is: by default
  // SQLite puts them in a temp file behind a 2 MB cache, and a join needing
  // an index over millions of rows (sched.latency's sched to thread_state)
  // spent most of its time there (83 s; 24 s in memory).
  if (Status st = ExecSql(db_, "PRAGMA temp_store = MEMORY"); !st.ok())
    return Status::Error("sluice query: cannot keep SQLite's temporary data in memory: " + st.message());
  tables_ = std::make_unique<Tables>();
  tables_->list = MakeQueryTables(storage_.get());
  for (const auto& table : tables_->list) SLUICE_RETURN_IF_ERROR(RegisterQueryTable(db_, table.get()));
  struct Function {
    const char* name;
    void (*fn)(sqlite3_context*, int, sqlite3_value**);
  };
  for (const Function& f : {Function{"trace_start", TraceStart}, Function{"trace_end", TraceEnd},
                            Function{"trace_dur", TraceDur}}) {
    if (sqlite3_create_function(db_, f.name, 0, SQLITE_UTF8 | SQLITE_DETERMINISTIC, storage_.get(), f.fn,
                                nullptr, nullptr) != SQLITE_OK)
      return Status::Error(std::string("sluice query: cannot define ") + f.name + "(): " + sqlite3_errmsg(db_));
  }
  if (Status percentiles = RegisterPercentileFunctions(db_); !percentiles.ok())
    return Status::Error("sluice query: " + percentiles.message());
  if (Status builtins = RegisterBuiltinFunctions(db_, storage_.get()); !builtins.ok())
    return Status::Error("sluice query: " + builtins.message());
  if (Status span_join = RegisterSpanJoin(db_); !span_join.ok())
    return Status::Error("sluice query: " + span_join.message());
  if (Status descendants = RegisterSliceDescendants(db_, storage_.get()); !descendants.ok())
    return Status::Error("sluice query: " + descendants.message());
  if (Status flows = RegisterConnectedFlow(db_, storage_.get()); !flows.ok())
    return Status::Error("sluice query: " + flows.message());
  if (Status critical_path = RegisterCriticalPath(db_); !critical_path.ok())
    return Status::Error("sluice query: " + critical_path.message());
  perfetto_sql_ = std::make_unique<PerfettoSql>(db_);
  for (const auto& view : kViews) {
    Status defined = ExecSql(db_, std::string("CREATE VIEW ") + view[0] + " AS " + view[1]);
    if (!defined.ok())
      return Status::Error(std::string("sluice query: cannot define view ") + view[0] + ": " + defined.message());
  }
  if (Status prelude = perfetto_sql_->IncludePrelude(); !prelude.ok())
    return Status::Error("sluice query: the PerfettoSQL prelude failed: " + prelude.message());
  // What the prelude defined is the engine's too (.tables, --export); its
  // private objects (_name) are not.
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_,
                         "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite%' "
                         "AND substr(name, 1, 1) != '_' ORDER BY name",
                         -1, &stmt, nullptr) == SQLITE_OK) {
    const std::vector<std::string> core = TableNames();
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      std::string name = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
      if (std::find(core.begin(), core.end(), name) == core.end()) prelude_names_.push_back(std::move(name));
    }
  }
  sqlite3_finalize(stmt);
  return Status::Ok();
}

namespace {

StatusOr<std::unique_ptr<QueryEngine>> Finish(std::unique_ptr<QueryEngine> engine, Status init) {
  if (!init.ok()) return init;
  return engine;
}

}  // namespace

StatusOr<std::unique_ptr<QueryEngine>> QueryEngine::Import(
    std::string_view head, uint64_t file_bytes,
    const std::function<Status(const std::function<void(std::string_view)>&, TraceFileSummary*)>& read) {
  std::unique_ptr<QueryEngine> engine(new QueryEngine());
  long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  uint64_t memory = pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) : 0;
  engine->storage_->ReserveForTraceFile(file_bytes, memory);
  TraceImporter importer(engine->storage_.get());
  importer.HashHead(head);
  TraceFileSummary summary;
  Status read_status = read([&importer](std::string_view packet) { importer.OnPacket(packet); }, &summary);
  if (!read_status.ok() && summary.packets == 0)
    return Status::Error("sluice query: " + read_status.message());
  importer.Finish(summary, read_status);
  Status init = engine->Init();
  return Finish(std::move(engine), init);
}

StatusOr<std::unique_ptr<QueryEngine>> QueryEngine::Open(const std::string& path) {
  std::string head;
  struct stat st = {};
  uint64_t file_bytes = stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  if (FILE* f = fopen(path.c_str(), "rb")) {
    head.resize(4096);
    head.resize(fread(head.data(), 1, head.size(), f));
    fclose(f);
  }
  return Import(head, file_bytes, [&path](const std::function<void(std::string_view)>& on_packet, TraceFileSummary* summary) {
    return ReadTraceFile(path, on_packet, summary);
  });
}

StatusOr<std::unique_ptr<QueryEngine>> QueryEngine::OpenBytes(std::string_view bytes) {
  return Import(bytes.substr(0, 4096), bytes.size(), [bytes](const std::function<void(std::string_view)>& on_packet, TraceFileSummary* summary) {
    return ReadTraceBytes(bytes, on_packet, summary);
  });
}

std::vector<std::string> QueryEngine::TableNames() const {
  std::vector<std::string> names;
  for (const auto& table : tables_->list) {
    std::string name(table->name());
    if (name.rfind("__", 0) != 0) names.push_back(name);
  }
  for (const auto& view : kViews) names.push_back(view[0]);
  names.insert(names.end(), prelude_names_.begin(), prelude_names_.end());
  return names;
}

}  // namespace sluice
