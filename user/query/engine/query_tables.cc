#include "user/query/engine/query_tables.h"

#include <sqlite3.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <type_traits>
#include <string>
#include <utility>

#include "user/query/engine/sched_summaries.h"

namespace sluice {
namespace {

// Where a column's values come from: straight from a TraceStorage vector
// (the common case, read with a switch: this is the per-cell hot path of
// every query) or, for derived columns, a function of the row id.
struct IntSource {
  enum class Kind : uint8_t { kFunction, kI64, kU32, kI32, kI8 } kind = Kind::kFunction;
  const void* vector = nullptr;  // const std::vector<T>* for the kind's T
  bool has_null = false;
  int64_t null = 0;              // The vector's NULL sentinel (has_null).
  std::function<int64_t(uint64_t row)> function;  // kNullInt: NULL

  IntSource() = default;
  template <typename F, typename = std::enable_if_t<std::is_invocable_r_v<int64_t, F, uint64_t>>>
  IntSource(F f) : function(std::move(f)) {}  // NOLINT: a lambda is a source

  int64_t At(uint64_t row) const {
    int64_t v;
    switch (kind) {
      case Kind::kI64: return (*static_cast<const std::vector<int64_t>*>(vector))[row];
      case Kind::kU32: v = (*static_cast<const std::vector<uint32_t>*>(vector))[row]; break;
      case Kind::kI32: v = (*static_cast<const std::vector<int32_t>*>(vector))[row]; break;
      case Kind::kI8: v = (*static_cast<const std::vector<int8_t>*>(vector))[row]; break;
      default: return function(row);
    }
    return has_null && v == null ? kNullInt : v;
  }
};

template <typename T>
constexpr IntSource::Kind KindOf() {
  if constexpr (std::is_same_v<T, int64_t>) return IntSource::Kind::kI64;
  else if constexpr (std::is_same_v<T, uint32_t>) return IntSource::Kind::kU32;
  else if constexpr (std::is_same_v<T, int32_t>) return IntSource::Kind::kI32;
  else return IntSource::Kind::kI8;
}

// A table whose columns are TraceStorage vectors (or functions of the row
// id), listed once in MakeQueryTables.
class ColumnarTable : public QueryTable {
 public:
  using TextOf = std::function<StringId(uint64_t row)>;    // kNullStringId: NULL
  using RealOf = std::function<double(uint64_t row)>;
  using Lookup = std::function<void(int64_t value, std::vector<uint64_t>* rows)>;

  ColumnarTable(std::string name, const StringPool* strings, std::function<uint64_t()> rows)
      : name_(std::move(name)), strings_(strings), rows_(std::move(rows)) {}

  // The id column: row id itself, looked up directly.
  ColumnarTable& Id(const std::string& name) {
    auto rows = rows_;
    Int(name, [](uint64_t row) { return static_cast<int64_t>(row); },
        [rows](int64_t value, std::vector<uint64_t>* out) {
          if (value >= 0 && static_cast<uint64_t>(value) < rows()) out->push_back(static_cast<uint64_t>(value));
        });
    columns_.back().row_index = true;
    return *this;
  }
  ColumnarTable& Int(const std::string& name, IntSource source, Lookup lookup = nullptr) {
    columns_.push_back({name, ColumnType::kInt, lookup != nullptr});
    Getter g;
    g.ints = std::move(source);
    g.lookup = std::move(lookup);
    getters_.push_back(std::move(g));
    return *this;
  }
  ColumnarTable& Text(const std::string& name, const std::vector<StringId>* ids, TextOf of = nullptr) {
    columns_.push_back({name, ColumnType::kText, false});
    Getter g;
    g.is_text = true;
    g.text_ids = ids;
    g.text_of = std::move(of);
    getters_.push_back(std::move(g));
    return *this;
  }
  ColumnarTable& Real(const std::string& name, RealOf of) {
    columns_.push_back({name, ColumnType::kReal, false});
    Getter g;
    g.real_of = std::move(of);
    getters_.push_back(std::move(g));
    return *this;
  }
  ColumnarTable& Null(const std::string& name) {
    return Int(name, [](uint64_t) { return kNullInt; });
  }

  std::string_view name() const override { return name_; }
  const std::vector<QueryColumn>& columns() const override { return columns_; }
  uint64_t row_count() const override { return rows_(); }

  void Result(uint64_t row, int column, sqlite3_context* ctx, QueryCursorState*) const override {
    const Getter& g = getters_[static_cast<size_t>(column)];
    if (g.is_text) {
      StringId id = g.Text(row);
      if (id == kNullStringId) {
        sqlite3_result_null(ctx);
      } else {
        std::string_view s = strings_->Get(id);
        sqlite3_result_text(ctx, s.data(), static_cast<int>(s.size()), SQLITE_STATIC);
      }
    } else if (g.real_of) {
      sqlite3_result_double(ctx, g.real_of(row));
    } else {
      int64_t v = g.ints.At(row);
      if (v == kNullInt) sqlite3_result_null(ctx);
      else sqlite3_result_int64(ctx, v);
    }
  }

  bool KeyAt(uint64_t row, int column, int64_t* key) const override {
    const Getter& g = getters_[static_cast<size_t>(column)];
    if (g.is_text) {
      *key = g.Text(row);
      return *key != kNullStringId;
    }
    if (g.real_of) {
      *key = static_cast<int64_t>(g.real_of(row));
      return true;
    }
    *key = g.ints.At(row);
    return *key != kNullInt;
  }

  void LookupRows(int column, int64_t value, std::vector<uint64_t>* rows) const override {
    const Getter& g = getters_[static_cast<size_t>(column)];
    if (g.lookup) g.lookup(value, rows);
  }

  std::string_view KeyText(int, int64_t key) const override {
    return strings_->Get(static_cast<StringId>(key));
  }
  const uint32_t* KeyArray(int column) const override {
    const Getter& g = getters_[static_cast<size_t>(column)];
    if (g.is_text && g.text_ids) return g.text_ids->data();
    if (g.ints.kind == IntSource::Kind::kU32 && !g.ints.has_null)
      return static_cast<const std::vector<uint32_t>*>(g.ints.vector)->data();
    return nullptr;
  }
  ColumnData Data(int column) const override {
    const Getter& g = getters_[static_cast<size_t>(column)];
    using Type = ColumnData::Type;
    if (g.is_text) return g.text_ids ? ColumnData{Type::kStringId, g.text_ids->data(), true} : ColumnData{};
    const void* v = g.ints.vector;
    bool null = g.ints.has_null;
    switch (g.ints.kind) {
      case IntSource::Kind::kI64: return {Type::kI64, static_cast<const std::vector<int64_t>*>(v)->data(), null};
      case IntSource::Kind::kU32: return {Type::kU32, static_cast<const std::vector<uint32_t>*>(v)->data(), null};
      case IntSource::Kind::kI32: return {Type::kI32, static_cast<const std::vector<int32_t>*>(v)->data(), null};
      case IntSource::Kind::kI8: return {Type::kI8, static_cast<const std::vector<int8_t>*>(v)->data(), null};
      default: return {};
    }
  }
  bool FindTextKey(int, std::string_view text, int64_t* key) const override {
    StringId id = strings_->Find(text);
    *key = id;
    return id != kNullStringId;
  }

 private:
  struct Getter {
    IntSource ints;
    bool is_text = false;
    const std::vector<StringId>* text_ids = nullptr;
    TextOf text_of;
    RealOf real_of;
    Lookup lookup;
    StringId Text(uint64_t row) const { return text_ids ? (*text_ids)[row] : text_of(row); }
  };
  std::string name_;
  const StringPool* strings_;
  std::function<uint64_t()> rows_;
  std::vector<QueryColumn> columns_;
  std::vector<Getter> getters_;
};

// Column sources over a vector, with or without a NULL sentinel.
template <typename T>
IntSource IntsOf(const std::vector<T>& v, T null) {
  IntSource s;
  s.kind = KindOf<T>();
  s.vector = &v;
  s.has_null = true;
  s.null = static_cast<int64_t>(null);
  return s;
}
template <typename T>
IntSource IntsOf(const std::vector<T>& v) {
  IntSource s;
  s.kind = KindOf<T>();
  s.vector = &v;
  return s;
}
template <typename T>
std::function<uint64_t()> SizeOf(const T& table) {
  return [&table] { return static_cast<uint64_t>(table.size()); };
}

// `args`: rows decoded from ArgSetStore on demand; the cursor keeps the last
// decoded set, so a scan decodes each set once.
class ArgsTable : public QueryTable {
 public:
  explicit ArgsTable(const TraceStorage* storage) : storage_(storage) {
    // flat_key is the key without its array indices, display_value is
    // formatted per row: SQLite compares those itself (their KeyAt is the
    // key's and none).
    columns_ = {{"id", ColumnType::kInt, true, /*ordered=*/true, /*filterable=*/true, /*row_index=*/true},
                {"arg_set_id", ColumnType::kInt, true},
                {"flat_key", ColumnType::kText, false, /*ordered=*/false, /*filterable=*/false},
                {"key", ColumnType::kText, false},
                {"int_value", ColumnType::kInt, false},
                {"string_value", ColumnType::kText, false},
                {"real_value", ColumnType::kReal, false},
                {"value_type", ColumnType::kText, false},
                {"display_value", ColumnType::kText, false, /*ordered=*/false, /*filterable=*/false}};
  }
  std::string_view name() const override { return "args"; }
  const std::vector<QueryColumn>& columns() const override { return columns_; }
  uint64_t row_count() const override { return storage_->args.row_count(); }

  struct State : QueryCursorState {
    uint32_t set = kNoArgSet;
    uint64_t first_row = 0;
    std::vector<Arg> args;
    std::string display;
  };
  std::unique_ptr<QueryCursorState> NewCursorState() const override { return std::make_unique<State>(); }

  const Arg& ArgAt(uint64_t row, State* state) const {
    if (state->set == kNoArgSet || row < state->first_row || row >= state->first_row + state->args.size()) {
      state->set = storage_->args.SetOfRow(row);
      storage_->args.Decode(state->set, &state->args, &state->first_row);
    }
    return state->args[row - state->first_row];
  }

  void Result(uint64_t row, int column, sqlite3_context* ctx, QueryCursorState* base) const override {
    auto* state = static_cast<State*>(base);
    const Arg& arg = ArgAt(row, state);
    auto text = [ctx](std::string_view s) {
      sqlite3_result_text(ctx, s.data(), static_cast<int>(s.size()), SQLITE_STATIC);
    };
    bool is_string = arg.type == ArgType::kString, is_real = arg.type == ArgType::kReal;
    // A string arg may be NULL (suspend_resume's device_name): no value, no display.
    if (is_string && static_cast<StringId>(arg.int_value) == kNullStringId && (column == 5 || column == 8)) {
      sqlite3_result_null(ctx);
      return;
    }
    switch (column) {
      case 0: sqlite3_result_int64(ctx, static_cast<int64_t>(row)); break;
      case 1: sqlite3_result_int64(ctx, state->set); break;
      case 2: {
        // flat_key: the key without its array indices ("args[2]" -> "args").
        std::string_view key = storage_->strings.Get(arg.key);
        if (key.find('[') == std::string_view::npos) {
          text(key);
          break;
        }
        state->display.clear();
        for (size_t i = 0; i < key.size(); ++i) {
          if (key[i] == '[') {
            const size_t close = key.find(']', i);
            if (close != std::string_view::npos) {
              i = close;
              continue;
            }
          }
          state->display += key[i];
        }
        sqlite3_result_text(ctx, state->display.data(), static_cast<int>(state->display.size()), SQLITE_TRANSIENT);
        break;
      }
      case 3: text(storage_->strings.Get(arg.key)); break;
      case 4:
        if (is_string || is_real) sqlite3_result_null(ctx);
        else sqlite3_result_int64(ctx, arg.int_value);
        break;
      case 5:
        if (is_string) text(storage_->strings.Get(static_cast<StringId>(arg.int_value)));
        else sqlite3_result_null(ctx);
        break;
      case 6:
        if (is_real) sqlite3_result_double(ctx, arg.real_value);
        else sqlite3_result_null(ctx);
        break;
      case 7: text(ArgTypeName(arg.type)); break;
      case 8:
        if (is_string) {
          text(storage_->strings.Get(static_cast<StringId>(arg.int_value)));
        } else {
          // A real shows as SQLite's CAST(x AS TEXT) writes it ("0.5", "1.0",
          // "1.0e+300"), as upstream's display_value does.
          char real_text[40];
          if (is_real) sqlite3_snprintf(sizeof real_text, real_text, "%!.15g", arg.real_value);
          state->display = arg.type == ArgType::kUint ? std::to_string(static_cast<uint64_t>(arg.int_value))
                           : arg.type == ArgType::kBool ? std::string(arg.int_value ? "true" : "false")
                           : is_real                  ? std::string(real_text)
                                                      : std::to_string(arg.int_value);
          sqlite3_result_text(ctx, state->display.data(), static_cast<int>(state->display.size()),
                              SQLITE_TRANSIENT);
        }
        break;
    }
  }

  bool KeyAt(uint64_t row, int column, int64_t* key) const override {
    State state;
    const Arg& arg = ArgAt(row, &state);
    switch (column) {
      case 0: *key = static_cast<int64_t>(row); return true;
      case 1: *key = state.set; return true;
      case 2:
      case 3: *key = arg.key; return true;
      case 4:
        *key = arg.int_value;
        return arg.type == ArgType::kInt || arg.type == ArgType::kUint;
      case 5:
        *key = arg.int_value;
        return arg.type == ArgType::kString;
      case 7: *key = static_cast<int64_t>(arg.type); return true;
      default: *key = 0; return false;
    }
  }

  bool FindTextKey(int column, std::string_view text, int64_t* key) const override {
    if (column == 7) {
      for (ArgType type : {ArgType::kInt, ArgType::kUint, ArgType::kString, ArgType::kReal, ArgType::kBool}) {
        if (ArgTypeName(type) != text) continue;
        *key = static_cast<int64_t>(type);
        return true;
      }
      return false;
    }
    const StringId id = storage_->strings.Find(text);
    *key = id;
    return id != kNullStringId;
  }

  std::string_view KeyText(int column, int64_t key) const override {
    // Keys (2, 3) and string values (5) are string ids; value_type (7) is
    // the ArgType.
    if (column == 7) return ArgTypeName(static_cast<ArgType>(key));
    return storage_->strings.Get(static_cast<StringId>(key));
  }

  void LookupRows(int column, int64_t value, std::vector<uint64_t>* rows) const override {
    if (value < 0) return;
    if (column == 0) {
      if (static_cast<uint64_t>(value) < row_count()) rows->push_back(static_cast<uint64_t>(value));
      return;
    }
    if (static_cast<uint64_t>(value) >= storage_->args.set_count()) return;
    State state;
    storage_->args.Decode(static_cast<uint32_t>(value), &state.args, &state.first_row);
    for (size_t i = 0; i < state.args.size(); ++i) rows->push_back(state.first_row + i);
  }

 private:
  const TraceStorage* storage_;
  std::vector<QueryColumn> columns_;
};

}  // namespace

std::vector<std::unique_ptr<QueryTable>> MakeQueryTables(const TraceStorage* storage) {
  const TraceStorage& s = *storage;
  const StringPool* strings = &s.strings;
  std::vector<std::unique_ptr<QueryTable>> tables;
  auto table = [&](const std::string& name, std::function<uint64_t()> rows) -> ColumnarTable& {
    tables.push_back(std::make_unique<ColumnarTable>(name, strings, std::move(rows)));
    return static_cast<ColumnarTable&>(*tables.back());
  };
  // Ids are StringIds interned at import (TraceStorage owns the pool and is
  // not modified after import, so interning here is safe only for constants
  // that the importer already interned; look them up instead).

  const auto& sc = s.sched;
  table("sched", SizeOf(sc))
      .Id("id")
      .Int("ts", IntsOf(sc.ts))
      .Int("dur", IntsOf(sc.dur))
      .Int("cpu", IntsOf(sc.cpu))
      .Int("utid", IntsOf(sc.utid))
      .Text("end_state", &sc.end_state)
      .Int("priority", IntsOf(sc.priority))
      .Int("ucpu", IntsOf(sc.cpu))
      .Int("ts_end", [&sc](uint64_t row) { return sc.dur[row] < 0 ? kNullInt : sc.ts[row] + sc.dur[row]; });

  const auto& ts = s.thread_state;
  table("thread_state", SizeOf(ts))
      .Id("id")
      .Int("ts", IntsOf(ts.ts))
      .Int("dur", IntsOf(ts.dur))
      .Int("cpu", IntsOf(ts.cpu, kNullU32))
      .Int("utid", IntsOf(ts.utid))
      .Text("state", &ts.state)
      .Int("io_wait", IntsOf(ts.io_wait, int8_t{-1}))
      .Text("blocked_function", nullptr,
            [&ts](uint64_t row) {
              auto it = ts.blocked_function.find(static_cast<uint32_t>(row));
              return it == ts.blocked_function.end() ? kNullStringId : it->second;
            })
      .Int("waker_utid", IntsOf(ts.waker_utid, kNullU32))
      .Int("waker_id", IntsOf(ts.waker_id, kNullU32))
      .Int("irq_context", IntsOf(ts.irq_context, int8_t{-1}))
      .Int("ucpu", IntsOf(ts.cpu, kNullU32));

  const auto& th = s.thread;
  auto utid_lookup = [&th](int64_t v, std::vector<uint64_t>* out) {
    if (v >= 0 && static_cast<uint64_t>(v) < th.size()) out->push_back(static_cast<uint64_t>(v));
  };
  table("thread", SizeOf(th))
      .Int("utid", [](uint64_t row) { return static_cast<int64_t>(row); }, utid_lookup)
      .Id("id")
      .Int("tid", IntsOf(th.tid))
      .Text("name", &th.name)
      .Int("start_ts", IntsOf(th.start_ts))
      .Int("end_ts", IntsOf(th.end_ts))
      .Int("upid", IntsOf(th.upid, kNullU32))
      .Int("is_main_thread", IntsOf(th.is_main_thread, int8_t{-1}))
      .Int("is_idle", [&th](uint64_t row) { return th.tid[row] == 0 ? 1 : 0; })
      .Int("machine_id", IntsOf(th.machine_id));

  const auto& pr = s.process;
  auto upid_lookup = [&pr](int64_t v, std::vector<uint64_t>* out) {
    if (v >= 0 && static_cast<uint64_t>(v) < pr.size()) out->push_back(static_cast<uint64_t>(v));
  };
  table("process", SizeOf(pr))
      .Int("upid", [](uint64_t row) { return static_cast<int64_t>(row); }, upid_lookup)
      .Id("id")
      .Int("pid", IntsOf(pr.pid))
      .Text("name", &pr.name)
      .Int("start_ts", IntsOf(pr.start_ts))
      .Int("end_ts", IntsOf(pr.end_ts))
      .Int("parent_upid", IntsOf(pr.parent_upid, kNullU32))
      .Int("uid", IntsOf(pr.uid))
      .Null("android_appid")
      .Text("cmdline", &pr.cmdline)
      .Int("machine_id", IntsOf(pr.machine_id))
      .Int("arg_set_id", IntsOf(pr.arg_set_id, kNoArgSet));

  // id = ucpu, as upstream: a relayed machine's CPU n is
  // machine * kMaxCpusPerMachine + n, `cpu` its number on its machine.
  const auto& cpu = s.cpu;
  auto ucpu_lookup = [&cpu](int64_t v, std::vector<uint64_t>* out) {
    auto it = std::lower_bound(cpu.cpu.begin(), cpu.cpu.end(), v,
                               [](uint32_t c, int64_t value) { return int64_t{c} < value; });
    if (it != cpu.cpu.end() && int64_t{*it} == v) out->push_back(static_cast<uint64_t>(it - cpu.cpu.begin()));
  };
  table("cpu", SizeOf(cpu))
      .Int("id", [&cpu](uint64_t row) { return int64_t{cpu.cpu[row]}; }, ucpu_lookup)
      .Int("ucpu", IntsOf(cpu.cpu))
      .Int("cpu", [&cpu](uint64_t row) { return int64_t{cpu.cpu[row] % CpuTable::kMaxCpusPerMachine}; })
      .Int("cluster_id", IntsOf(cpu.cluster_id))
      .Text("processor", &cpu.processor)
      .Int("machine_id", [&cpu](uint64_t row) { return int64_t{cpu.cpu[row] / CpuTable::kMaxCpusPerMachine}; })
      .Int("capacity", IntsOf(cpu.capacity, kNullInt))
      .Int("arg_set_id", IntsOf(cpu.arg_set_id, kNoArgSet));

  const auto& freq = s.cpu_freq;
  table("cpu_available_frequencies", SizeOf(freq))
      .Id("id")
      .Int("cpu", IntsOf(freq.ucpu))
      .Int("freq", IntsOf(freq.freq))
      .Int("ucpu", IntsOf(freq.ucpu));

  const auto& fe = s.ftrace_event;
  table("ftrace_event", SizeOf(fe))
      .Id("id")
      .Int("ts", IntsOf(fe.ts))
      .Text("name", &fe.name)
      .Int("cpu", IntsOf(fe.cpu))
      .Int("utid", IntsOf(fe.utid))
      .Int("arg_set_id", IntsOf(fe.arg_set_id, kNoArgSet))
      .Int("common_flags", [](uint64_t) { return int64_t{0}; })
      .Int("ucpu", IntsOf(fe.cpu));

  tables.push_back(std::make_unique<ArgsTable>(storage));

  const auto& co = s.counter;
  table("counter", SizeOf(co))
      .Id("id")
      .Int("ts", IntsOf(co.ts))
      .Int("track_id", IntsOf(co.track_id))
      .Real("value", [&co](uint64_t row) { return co.value[row]; })
      .Int("arg_set_id", IntsOf(co.arg_set_id, kNoArgSet));

  const auto& tr = s.track;
  table("__sluice_track", SizeOf(tr))
      .Id("id")
      .Text("name", &tr.name)
      .Text("type", &tr.type)
      .Int("is_counter", IntsOf(tr.is_counter))
      // The CPU's number on its machine, as upstream's CPU tracks say it.
      .Int("cpu", [&tr](uint64_t row) {
        return tr.cpu[row] == kNullU32 ? kNullInt : int64_t{tr.cpu[row] % CpuTable::kMaxCpusPerMachine};
      })
      .Int("utid", IntsOf(tr.utid, kNullU32))
      .Int("upid", IntsOf(tr.upid, kNullU32))
      .Int("dimension_arg_set_id", IntsOf(tr.dimension_arg_set_id, kNoArgSet))
      .Int("track_group_id", IntsOf(tr.track_group_id, kNullU32))
      .Text("unit", &tr.unit)
      .Int("source_arg_set_id", IntsOf(tr.source_arg_set_id, kNoArgSet))
      // The machine of what the track is of: its thread's, process's or CPU's.
      .Int("machine_id", [&s, &tr](uint64_t row) {
        if (tr.utid[row] != kNullU32) return int64_t{s.thread.machine_id[tr.utid[row]]};
        if (tr.upid[row] != kNullU32) return int64_t{s.process.machine_id[tr.upid[row]]};
        if (tr.cpu[row] != kNullU32) return int64_t{tr.cpu[row] / CpuTable::kMaxCpusPerMachine};
        return int64_t{0};
      });

  const auto& fl = s.flow;
  table("flow", SizeOf(fl))
      .Id("id")
      .Int("slice_out", IntsOf(fl.slice_out))
      .Int("slice_in", IntsOf(fl.slice_in))
      .Int("trace_id", IntsOf(fl.trace_id, kNullInt))
      .Int("arg_set_id", IntsOf(fl.arg_set_id, kNoArgSet));

  const auto& im = s.interrupt_mapping;
  table("_linux_interrupt_mapping", SizeOf(im))
      .Id("id")
      .Int("irq_id", IntsOf(im.irq_id))
      .Text("name", &im.name)
      .Int("machine_id", [](uint64_t) { return int64_t{0}; });

  const auto& sl = s.slice;
  table("slice", SizeOf(sl))
      .Id("id")
      .Int("ts", IntsOf(sl.ts))
      .Int("dur", IntsOf(sl.dur))
      .Int("track_id", IntsOf(sl.track_id))
      .Text("category", &sl.category)
      .Text("name", &sl.name)
      .Int("depth", IntsOf(sl.depth))
      .Int("parent_id", IntsOf(sl.parent_id, kNullU32))
      .Int("arg_set_id", IntsOf(sl.arg_set_id, kNoArgSet))
      .Null("thread_ts")
      .Null("thread_dur")
      .Null("thread_instruction_count")
      .Null("thread_instruction_delta")
      .Text("cat", &sl.category)
      .Int("slice_id", [](uint64_t row) { return static_cast<int64_t>(row); });

  // Summaries computed on first read (sched_summaries.h). The tables share
  // one SchedSummaries, which lives as long as the lambdas that hold it.
  auto summaries = std::make_shared<SchedSummaries>(storage);
  table("sluice_thread_cpu", [summaries] { return summaries->thread_cpu().size(); })
      .Int("utid", [summaries](uint64_t row) { return int64_t{summaries->thread_cpu().utid[row]}; })
      .Int("cpu", [summaries](uint64_t row) { return int64_t{summaries->thread_cpu().cpu[row]}; })
      .Int("runs", [summaries](uint64_t row) { return summaries->thread_cpu().runs[row]; })
      .Int("dur", [summaries](uint64_t row) { return summaries->thread_cpu().dur[row]; });
  table("sluice_thread_runnable", [summaries] { return summaries->thread_runnable().size(); })
      .Int("utid", [summaries](uint64_t row) { return int64_t{summaries->thread_runnable().utid[row]}; })
      .Int("waits", [summaries](uint64_t row) { return summaries->thread_runnable().waits[row]; })
      .Int("dur", [summaries](uint64_t row) { return summaries->thread_runnable().dur[row]; })
      .Real("p50_dur", [summaries](uint64_t row) { return summaries->thread_runnable().p50_dur[row]; })
      .Real("p90_dur", [summaries](uint64_t row) { return summaries->thread_runnable().p90_dur[row]; })
      .Real("p99_dur", [summaries](uint64_t row) { return summaries->thread_runnable().p99_dur[row]; })
      .Int("max_dur", [summaries](uint64_t row) { return summaries->thread_runnable().max_dur[row]; });
  table("sluice_thread_runnable_histogram", [summaries] { return summaries->runnable_histogram().size(); })
      .Int("utid", [summaries](uint64_t row) { return int64_t{summaries->runnable_histogram().utid[row]}; })
      .Int("bucket", [summaries](uint64_t row) { return int64_t{summaries->runnable_histogram().bucket[row]}; })
      .Int("lower_ns", [summaries](uint64_t row) {
        return int64_t{1} << summaries->runnable_histogram().bucket[row];
      })
      .Int("waits", [summaries](uint64_t row) { return summaries->runnable_histogram().waits[row]; });
  table("sluice_thread_state_time", [summaries] { return summaries->thread_state_time().size(); })
      .Int("utid", [summaries](uint64_t row) { return int64_t{summaries->thread_state_time().utid[row]}; })
      .Text("state", nullptr, [summaries](uint64_t row) { return summaries->thread_state_time().state[row]; })
      .Int("rows", [summaries](uint64_t row) { return summaries->thread_state_time().rows[row]; })
      .Int("dur", [summaries](uint64_t row) { return summaries->thread_state_time().dur[row]; });
  table("sluice_cpu_timeline", [summaries] { return summaries->cpu_timeline().size(); })
      .Int("cpu", [summaries](uint64_t row) { return int64_t{summaries->cpu_timeline().cpu[row]}; })
      .Int("bucket", [summaries](uint64_t row) { return int64_t{summaries->cpu_timeline().bucket[row]}; })
      .Int("ts", [summaries](uint64_t row) {
        const CpuTimeline& t = summaries->cpu_timeline();
        return t.start_ts + t.bucket[row] * t.bucket_ns;
      })
      .Int("dur", [summaries](uint64_t) { return summaries->cpu_timeline().bucket_ns; })
      .Int("run_ns", [summaries](uint64_t row) { return summaries->cpu_timeline().run_ns[row]; })
      .Int("top_upid", [summaries](uint64_t row) {
        const uint32_t upid = summaries->cpu_timeline().top_upid[row];
        return upid == kNullU32 ? kNullInt : int64_t{upid};
      })
      .Int("top_run_ns", [summaries](uint64_t row) { return summaries->cpu_timeline().top_run_ns[row]; });

  const auto& md = s.metadata;
  table("metadata", SizeOf(md))
      .Id("id")
      .Text("name", &md.name)
      .Text("key_type", &md.key_type)
      .Int("int_value", IntsOf(md.int_value))
      .Text("str_value", &md.str_value)
      .Int("machine_id", IntsOf(md.machine_id, kNullU32));

  const auto& cs = s.clock_snapshot;
  table("clock_snapshot", SizeOf(cs))
      .Id("id")
      .Int("ts", IntsOf(cs.ts))
      .Int("clock_id", IntsOf(cs.clock_id))
      .Text("clock_name", &cs.clock_name)
      .Int("clock_value", IntsOf(cs.clock_value))
      .Int("snapshot_id", IntsOf(cs.snapshot_id))
      .Int("machine_id", [](uint64_t) { return int64_t{0}; });

  const auto& st = s.stats;
  table("stats", SizeOf(st))
      .Id("id")
      .Text("name", &st.name)
      .Int("idx", IntsOf(st.idx))
      .Text("severity", &st.severity)
      .Text("source", &st.source)
      .Int("value", IntsOf(st.value))
      .Text("description", &st.description)
      .Int("machine_id", IntsOf(st.machine_id, kNullU32))
      .Int("trace_id", [&st](uint64_t row) { return st.machine_id[row] == kNullU32 ? kNullInt : 0; });

  const auto& ma = s.machine;
  table("__sluice_machine", SizeOf(ma))
      .Id("id")
      .Int("raw_id", IntsOf(ma.raw_id))
      .Text("name", &ma.name);
  return tables;
}

}  // namespace sluice
