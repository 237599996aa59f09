// How sluice query stores tables for SQLite (docs/QUERY.md, "Why virtual
// tables"; figures in docs/PERFORMANCE.md, "sluice query").
//
//   BM_SqliteInsert   ftrace_event-shaped rows (ts, name, cpu, utid,
//                     arg_set_id) INSERTed into a plain SQLite table through
//                     one prepared statement in one transaction: the
//                     alternative to virtual tables.
//   BM_ColumnAppend   the same rows appended to TraceStorage's columns: what
//                     the importer does instead.
//   BM_VirtualScan    select sum(ts), count(*) over the virtual ftrace_event
//                     table of that storage (read side).
//   BM_PlainScan      the same query over the plain table.
// Rows per iteration: 1 M. A sched trace of 12 M events has 12 M
// ftrace_event rows, ~8 M sched and ~12 M thread_state rows, and 7 args per
// event (84 M args rows if they were stored one per row).
#include <benchmark/benchmark.h>
#include <sqlite3.h>

#include <memory>
#include <string>

#include "user/query/engine/query_table.h"
#include "user/query/engine/query_tables.h"
#include "user/query/storage/trace_storage.h"

namespace sluice {
namespace {

constexpr int64_t kRows = 1'000'000;

void FillStorage(TraceStorage* s) {
  StringId name = s->strings.Intern("sched_switch");
  for (int64_t i = 0; i < kRows; ++i) {
    s->ftrace_event.ts.push_back(1'000'000 + i * 500);
    s->ftrace_event.name.push_back(name);
    s->ftrace_event.cpu.push_back(static_cast<uint32_t>(i & 1));
    s->ftrace_event.utid.push_back(static_cast<uint32_t>(i % 97));
    s->ftrace_event.arg_set_id.push_back(static_cast<uint32_t>(i % 1000));
  }
}

sqlite3* OpenMemory() {
  sqlite3* db = nullptr;
  sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  return db;
}

void InsertRows(sqlite3* db) {
  sqlite3_exec(db, "create table ftrace_event(id integer primary key, ts int, name text, cpu int, utid int, "
                   "arg_set_id int)", nullptr, nullptr, nullptr);
  sqlite3_exec(db, "begin", nullptr, nullptr, nullptr);
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, "insert into ftrace_event(ts, name, cpu, utid, arg_set_id) values (?, ?, ?, ?, ?)", -1,
                     &stmt, nullptr);
  for (int64_t i = 0; i < kRows; ++i) {
    sqlite3_bind_int64(stmt, 1, 1'000'000 + i * 500);
    sqlite3_bind_text(stmt, 2, "sched_switch", 12, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 3, i & 1);
    sqlite3_bind_int64(stmt, 4, i % 97);
    sqlite3_bind_int64(stmt, 5, i % 1000);
    sqlite3_step(stmt);
    sqlite3_reset(stmt);
  }
  sqlite3_finalize(stmt);
  sqlite3_exec(db, "commit", nullptr, nullptr, nullptr);
}

void Scan(sqlite3* db, benchmark::State& state) {
  sqlite3_stmt* stmt = nullptr;
  sqlite3_prepare_v2(db, "select sum(ts), count(*) from ftrace_event", -1, &stmt, nullptr);
  for (auto _ : state) {
    sqlite3_step(stmt);
    benchmark::DoNotOptimize(sqlite3_column_int64(stmt, 0));
    sqlite3_reset(stmt);
  }
  sqlite3_finalize(stmt);
  state.SetItemsProcessed(state.iterations() * kRows);
}

void BM_SqliteInsert(benchmark::State& state) {
  for (auto _ : state) {
    sqlite3* db = OpenMemory();
    InsertRows(db);
    sqlite3_close(db);
  }
  state.SetItemsProcessed(state.iterations() * kRows);
}
BENCHMARK(BM_SqliteInsert)->Unit(benchmark::kMillisecond);

void BM_ColumnAppend(benchmark::State& state) {
  for (auto _ : state) {
    auto storage = std::make_unique<TraceStorage>();
    FillStorage(storage.get());
    benchmark::DoNotOptimize(storage->ftrace_event.ts.data());
  }
  state.SetItemsProcessed(state.iterations() * kRows);
}
BENCHMARK(BM_ColumnAppend)->Unit(benchmark::kMillisecond);

void BM_VirtualScan(benchmark::State& state) {
  TraceStorage storage;
  FillStorage(&storage);
  auto tables = MakeQueryTables(&storage);
  sqlite3* db = OpenMemory();
  for (const auto& table : tables) (void)RegisterQueryTable(db, table.get());
  Scan(db, state);
  sqlite3_close(db);
}
BENCHMARK(BM_VirtualScan)->Unit(benchmark::kMillisecond);

void BM_PlainScan(benchmark::State& state) {
  sqlite3* db = OpenMemory();
  InsertRows(db);
  Scan(db, state);
  sqlite3_close(db);
}
BENCHMARK(BM_PlainScan)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace sluice

BENCHMARK_MAIN();
