#include "user/query/engine/operators/span_join.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "user/query/engine/perfetto_sql/sql_tokenizer.h"

namespace sluice {
namespace {

enum class JoinMode { kInner, kLeft, kOuter };

constexpr int64_t kNoTime = std::numeric_limits<int64_t>::max();

std::string Lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::string Quoted(const std::string& name) {
  std::string q = "\"";
  for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// One side of the join as the module's arguments name it.
struct TableSpec {
  std::string name;
  std::string partition;              // Empty: unpartitioned.
  bool has_dur = false;
  std::vector<std::string> columns;   // Its columns but ts, dur and the partition, in order.
};

struct SpanJoinTable {
  sqlite3_vtab base;
  sqlite3* db;
  JoinMode mode;
  TableSpec spec[2];
  std::string partition;  // The output's partition column; empty if neither side is partitioned.
};

// One table read in (partition, ts) order, a row at a time.
struct Source {
  const TableSpec* spec = nullptr;
  sqlite3_stmt* stmt = nullptr;
  bool has_row = false;
  int64_t ts = 0, end = 0, part = 0;
  bool instant = false;
  int first_column = 0;  // Of spec->columns in the statement.
  // For the overlap check: the end of what this partition held so far.
  bool have_prev = false;
  int64_t prev_part = 0, prev_end = 0;

  ~Source() { sqlite3_finalize(stmt); }

  Status Prepare(sqlite3* db) {
    const bool partitioned = !spec->partition.empty();
    std::string sql = "SELECT ts, " + std::string(spec->has_dur ? "dur" : "0") + ", " +
                      (partitioned ? Quoted(spec->partition) : std::string("0"));
    for (const std::string& c : spec->columns) sql += ", " + Quoted(c);
    sql += " FROM " + Quoted(spec->name);
    if (partitioned) sql += " WHERE " + Quoted(spec->partition) + " IS NOT NULL";
    sql += partitioned ? " ORDER BY 3, 1" : " ORDER BY 1";
    first_column = 3;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK)
      return Status::Error("SPAN_JOIN: cannot read " + spec->name + ": " + sqlite3_errmsg(db));
    return Step();
  }

  Status Restart() {
    sqlite3_reset(stmt);
    have_prev = false;
    return Step();
  }

  Status Step() {
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) {
      has_row = false;
      return Status::Ok();
    }
    if (rc != SQLITE_ROW)
      return Status::Error("SPAN_JOIN: reading " + spec->name + ": " + sqlite3_errmsg(sqlite3_db_handle(stmt)));
    has_row = true;
    if (sqlite3_column_type(stmt, 0) != SQLITE_INTEGER)
      return Status::Error("SPAN_JOIN: " + spec->name + " has a ts that is not an integer");
    ts = sqlite3_column_int64(stmt, 0);
    const int64_t dur = sqlite3_column_int64(stmt, 1);
    if (dur < -1) return Status::Error("SPAN_JOIN: " + spec->name + " has a negative dur at ts " + std::to_string(ts));
    // dur -1 (still open at the trace's end) counts as an instant, as upstream counts it.
    instant = dur <= 0;
    end = instant ? ts : ts + dur;
    if (!spec->partition.empty()) {
      if (sqlite3_column_type(stmt, 2) != SQLITE_INTEGER)
        return Status::Error("SPAN_JOIN: partition column " + spec->partition + " of " + spec->name +
                             " holds a value that is not an integer");
      part = sqlite3_column_int64(stmt, 2);
    }
    if (have_prev && prev_part == part && ts < prev_end)
      return Status::Error("SPAN_JOIN: spans of " + spec->name + " overlap" +
                           (spec->partition.empty() ? std::string()
                                                    : " in partition " + spec->partition + " = " + std::to_string(part)) +
                           " at ts " + std::to_string(ts) +
                           ": each table's spans must not overlap within a partition (upstream would return wrong "
                           "rows); partition it further or merge its spans first");
    prev_end = have_prev && prev_part == part ? std::max(prev_end, end) : end;
    prev_part = part;
    have_prev = true;
    return Status::Ok();
  }
};

struct SpanJoinCursor {
  sqlite3_vtab_cursor base;
  const SpanJoinTable* table = nullptr;
  Source src[2];
  int partitioned_side = -1;  // Mixed partitioning: the side that is partitioned.
  bool in_partition = false;
  int64_t part = 0;
  bool have_t = false;
  int64_t t = 0;
  bool advance_after_emit[2] = {false, false};  // An instant emitted: move past it next.
  bool eof = true;
  int64_t row_ts = 0, row_dur = 0, rowid = 0;
  bool row_has[2] = {false, false};

  // The side's current row, if it belongs to the partition being swept.
  Source* Current(int side) {
    Source& s = src[side];
    if (!s.has_row) return nullptr;
    if (!s.spec->partition.empty() && s.part != part) return nullptr;
    return &s;
  }

  // Picks the next partition to sweep; false when there is none.
  StatusOr<bool> StartPartition() {
    have_t = false;
    Source& a = src[0];
    Source& b = src[1];
    if (partitioned_side >= 0) {
      Source& p = src[partitioned_side];
      if (!p.has_row) return false;
      part = p.part;
      SLUICE_RETURN_IF_ERROR(src[1 - partitioned_side].Restart());
      in_partition = true;
      return true;
    }
    for (;;) {
      if (!a.has_row && !b.has_row) return false;
      if (table->mode == JoinMode::kInner) {
        if (!a.has_row || !b.has_row) return false;
        if (a.part < b.part) {
          SLUICE_RETURN_IF_ERROR(a.Step());
          continue;
        }
        if (b.part < a.part) {
          SLUICE_RETURN_IF_ERROR(b.Step());
          continue;
        }
        part = a.part;
      } else if (table->mode == JoinMode::kLeft) {
        if (!a.has_row) return false;
        while (b.has_row && b.part < a.part) SLUICE_RETURN_IF_ERROR(b.Step());
        part = a.part;
      } else {
        part = !a.has_row ? b.part : !b.has_row ? a.part : std::min(a.part, b.part);
      }
      in_partition = true;
      return true;
    }
  }

  // Leaves the partition: its remaining rows on a partitioned side are
  // skipped (an unpartitioned side is read again for the next one).
  Status EndPartition() {
    in_partition = false;
    for (int side : {0, 1}) {
      Source& s = src[side];
      if (s.spec->partition.empty() && partitioned_side >= 0) continue;
      while (s.has_row && (s.spec->partition.empty() || s.part == part)) SLUICE_RETURN_IF_ERROR(s.Step());
    }
    return Status::Ok();
  }

  // Moves to the next output row (eof when none is left).
  Status Advance() {
    const JoinMode mode = table->mode;
    for (;;) {
      for (int side : {0, 1}) {
        if (!advance_after_emit[side]) continue;
        advance_after_emit[side] = false;
        SLUICE_RETURN_IF_ERROR(src[side].Step());
      }
      if (!in_partition) {
        StatusOr<bool> started = StartPartition();
        if (!started.ok()) return started.status();
        if (!*started) {
          eof = true;
          return Status::Ok();
        }
      }
      Source* a = Current(0);
      Source* b = Current(1);
      if ((!a && !b) || (mode == JoinMode::kInner && (!a || !b)) || (mode == JoinMode::kLeft && !a)) {
        // Nothing more to give in this partition.
        SLUICE_RETURN_IF_ERROR(EndPartition());
        continue;
      }
      if (!have_t) {
        t = std::min(a ? a->ts : kNoTime, b ? b->ts : kNoTime);
        have_t = true;
      }
      // Spans over by now; an instant behind t was passed (it cannot be: t
      // stops at every start), but is skipped rather than looped on.
      bool stepped = false;
      for (int side : {0, 1}) {
        Source* s = side == 0 ? a : b;
        if (s && (s->instant ? s->ts < t : s->end <= t)) {
          SLUICE_RETURN_IF_ERROR(src[side].Step());
          stepped = true;
        }
      }
      if (stepped) continue;
      const bool a_on = a && a->ts <= t;
      const bool b_on = b && b->ts <= t;
      if ((a_on && a->instant) || (b_on && b->instant)) {
        // An instant at t: it meets whatever the other side holds at t.
        row_ts = t;
        row_dur = 0;
        const bool both = a_on && b_on;
        const bool a_instant = a_on && a->instant;
        const bool b_instant = b_on && b->instant;
        bool emit = false;
        if (both) {
          row_has[0] = row_has[1] = emit = true;
        } else if (a_instant && mode != JoinMode::kInner) {
          row_has[0] = emit = true;
          row_has[1] = false;
        } else if (b_instant && mode == JoinMode::kOuter) {
          row_has[0] = false;
          row_has[1] = emit = true;
        }
        advance_after_emit[0] = a_instant;
        advance_after_emit[1] = b_instant;
        if (emit) return Status::Ok();
        continue;
      }
      if (!a_on && !b_on) {
        t = std::min(a ? a->ts : kNoTime, b ? b->ts : kNoTime);
        continue;
      }
      const int64_t next = std::min(a ? (a_on ? a->end : a->ts) : kNoTime, b ? (b_on ? b->end : b->ts) : kNoTime);
      const bool emit = (a_on && b_on) || (a_on && mode != JoinMode::kInner) || (b_on && mode == JoinMode::kOuter);
      row_ts = t;
      row_dur = next - t;
      row_has[0] = a_on;
      row_has[1] = b_on;
      t = next;
      if (emit && row_dur > 0) return Status::Ok();
    }
  }
};

// "name [PARTITIONED column]", as written in the module's arguments.
Status ParseTableArgument(sqlite3* db, const char* text, TableSpec* spec) {
  const std::vector<SqlToken> tokens = SignificantSqlTokens(text);
  const std::string usage = " (SPAN_JOIN(table [PARTITIONED column], table [PARTITIONED column]))";
  if (tokens.empty() || tokens[0].kind != SqlTokenKind::kIdentifier)
    return Status::Error("SPAN_JOIN: expected a table name, got '" + std::string(text) + "'" + usage);
  spec->name = tokens[0].Name();
  if (tokens.size() == 3 && tokens[1].IsWord("PARTITIONED") && tokens[2].kind == SqlTokenKind::kIdentifier) {
    spec->partition = tokens[2].Name();
  } else if (tokens.size() != 1) {
    return Status::Error("SPAN_JOIN: cannot read '" + std::string(text) + "'" + usage);
  }
  sqlite3_stmt* stmt = nullptr;
  const std::string sql = "SELECT * FROM " + Quoted(spec->name) + " LIMIT 0";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    Status error = Status::Error("SPAN_JOIN: " + std::string(sqlite3_errmsg(db)));
    sqlite3_finalize(stmt);
    return error;
  }
  bool has_ts = false, has_partition = spec->partition.empty();
  for (int i = 0; i < sqlite3_column_count(stmt); i++) {
    const std::string column = sqlite3_column_name(stmt, i);
    const std::string lower = Lower(column);
    if (lower == "ts") {
      has_ts = true;
    } else if (lower == "dur") {
      spec->has_dur = true;
    } else if (lower == Lower(spec->partition)) {
      has_partition = true;
      spec->partition = column;
    } else {
      spec->columns.push_back(column);
    }
  }
  sqlite3_finalize(stmt);
  if (!has_ts) return Status::Error("SPAN_JOIN: " + spec->name + " has no ts column");
  const std::string p = Lower(spec->partition);
  if (p == "ts" || p == "dur") return Status::Error("SPAN_JOIN: " + spec->name + " cannot be partitioned by " + p);
  if (!has_partition)
    return Status::Error("SPAN_JOIN: " + spec->name + " has no column " + spec->partition + " to partition by");
  return Status::Ok();
}

int Create(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out, char** error) {
  auto fail = [error](const Status& status) {
    *error = sqlite3_mprintf("%s", status.message().c_str());
    return SQLITE_ERROR;
  };
  if (argc != 5)
    return fail(Status::Error("SPAN_JOIN takes two tables: SPAN_JOIN(t1 [PARTITIONED c], t2 [PARTITIONED c])"));
  auto table = std::make_unique<SpanJoinTable>();
  table->base = {};
  table->db = db;
  table->mode = static_cast<JoinMode>(reinterpret_cast<intptr_t>(aux));
  for (int side : {0, 1})
    if (Status st = ParseTableArgument(db, argv[3 + side], &table->spec[side]); !st.ok()) return fail(st);
  const std::string& p0 = table->spec[0].partition;
  const std::string& p1 = table->spec[1].partition;
  if (!p0.empty() && !p1.empty() && Lower(p0) != Lower(p1))
    return fail(Status::Error("SPAN_JOIN: both tables are partitioned, by different columns (" + p0 + " and " + p1 +
                              "): partition them by the same one"));
  table->partition = !p0.empty() ? p0 : p1;
  std::string schema = "CREATE TABLE x(ts, dur";
  std::vector<std::string> names = {"ts", "dur"};
  if (!table->partition.empty()) {
    schema += ", " + Quoted(table->partition);
    names.push_back(Lower(table->partition));
  }
  for (int side : {0, 1}) {
    for (const std::string& c : table->spec[side].columns) {
      if (std::find(names.begin(), names.end(), Lower(c)) != names.end())
        return fail(Status::Error("SPAN_JOIN: column " + c + " is in both tables (and not their partition): select "
                                  "it under another name on one side"));
      names.push_back(Lower(c));
      schema += ", " + Quoted(c);
    }
  }
  schema += ")";
  if (sqlite3_declare_vtab(db, schema.c_str()) != SQLITE_OK)
    return fail(Status::Error(std::string("SPAN_JOIN: ") + sqlite3_errmsg(db)));
  *out = &table.release()->base;
  return SQLITE_OK;
}

int Destroy(sqlite3_vtab* vtab) {
  delete reinterpret_cast<SpanJoinTable*>(vtab);
  return SQLITE_OK;
}

int BestIndex(sqlite3_vtab*, sqlite3_index_info* info) {
  info->estimatedCost = 1e9;
  return SQLITE_OK;
}

int Open(sqlite3_vtab* vtab, sqlite3_vtab_cursor** out) {
  auto* cursor = new SpanJoinCursor();
  cursor->table = reinterpret_cast<SpanJoinTable*>(vtab);
  *out = &cursor->base;
  return SQLITE_OK;
}

int Close(sqlite3_vtab_cursor* cursor) {
  delete reinterpret_cast<SpanJoinCursor*>(cursor);
  return SQLITE_OK;
}

int Fail(sqlite3_vtab_cursor* cursor, const Status& status) {
  sqlite3_free(cursor->pVtab->zErrMsg);
  cursor->pVtab->zErrMsg = sqlite3_mprintf("%s", status.message().c_str());
  return SQLITE_ERROR;
}

int Filter(sqlite3_vtab_cursor* base, int, const char*, int, sqlite3_value**) {
  auto* c = reinterpret_cast<SpanJoinCursor*>(base);
  const SpanJoinTable* table = c->table;
  for (int side : {0, 1}) {
    Source& s = c->src[side];
    sqlite3_finalize(s.stmt);
    s = Source();
    s.spec = &table->spec[side];
  }
  const bool p0 = !table->spec[0].partition.empty(), p1 = !table->spec[1].partition.empty();
  c->partitioned_side = p0 == p1 ? -1 : p0 ? 0 : 1;
  c->in_partition = false;
  c->advance_after_emit[0] = c->advance_after_emit[1] = false;
  c->eof = false;
  c->rowid = 0;
  for (int side : {0, 1})
    if (Status st = c->src[side].Prepare(table->db); !st.ok()) return Fail(base, st);
  if (Status st = c->Advance(); !st.ok()) return Fail(base, st);
  return SQLITE_OK;
}

int Next(sqlite3_vtab_cursor* base) {
  auto* c = reinterpret_cast<SpanJoinCursor*>(base);
  c->rowid++;
  if (Status st = c->Advance(); !st.ok()) return Fail(base, st);
  return SQLITE_OK;
}

int Eof(sqlite3_vtab_cursor* base) { return reinterpret_cast<SpanJoinCursor*>(base)->eof; }

int Column(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int i) {
  auto* c = reinterpret_cast<SpanJoinCursor*>(base);
  if (i <= 1) {
    sqlite3_result_int64(ctx, i == 0 ? c->row_ts : c->row_dur);
    return SQLITE_OK;
  }
  i -= 2;
  if (!c->table->partition.empty()) {
    if (i == 0) {
      sqlite3_result_int64(ctx, c->part);
      return SQLITE_OK;
    }
    i--;
  }
  for (int side : {0, 1}) {
    const int n = static_cast<int>(c->table->spec[side].columns.size());
    if (i < n) {
      const Source& s = c->src[side];
      if (c->row_has[side] && s.has_row) {
        sqlite3_result_value(ctx, sqlite3_column_value(s.stmt, s.first_column + i));
      } else {
        sqlite3_result_null(ctx);
      }
      return SQLITE_OK;
    }
    i -= n;
  }
  sqlite3_result_null(ctx);
  return SQLITE_OK;
}

int Rowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) {
  *rowid = reinterpret_cast<SpanJoinCursor*>(base)->rowid;
  return SQLITE_OK;
}

sqlite3_module MakeModule() {
  sqlite3_module m{};
  m.xCreate = Create;
  m.xConnect = Create;
  m.xBestIndex = BestIndex;
  m.xDisconnect = Destroy;
  m.xDestroy = Destroy;
  m.xOpen = Open;
  m.xClose = Close;
  m.xFilter = Filter;
  m.xNext = Next;
  m.xEof = Eof;
  m.xColumn = Column;
  m.xRowid = Rowid;
  return m;
}

const sqlite3_module kSpanJoinModule = MakeModule();

}  // namespace

Status RegisterSpanJoin(sqlite3* db) {
  const struct {
    const char* name;
    JoinMode mode;
  } modules[] = {
      {"span_join", JoinMode::kInner}, {"span_left_join", JoinMode::kLeft}, {"span_outer_join", JoinMode::kOuter}};
  for (const auto& m : modules) {
    if (sqlite3_create_module_v2(db, m.name, &kSpanJoinModule, reinterpret_cast<void*>(static_cast<intptr_t>(m.mode)),
                                 nullptr) != SQLITE_OK)
      return Status::Error(std::string("cannot define ") + m.name + ": " + sqlite3_errmsg(db));
  }
  return Status::Ok();
}

}  // namespace sluice
