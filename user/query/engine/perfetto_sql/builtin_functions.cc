#include "user/query/engine/perfetto_sql/builtin_functions.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "user/query/storage/trace_storage.h"

namespace sluice {
namespace {

std::string_view Text(sqlite3_value* v) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(v));
  return p ? std::string_view(p, static_cast<size_t>(sqlite3_value_bytes(v))) : std::string_view();
}

void Error(sqlite3_context* ctx, const std::string& message) { sqlite3_result_error(ctx, message.c_str(), -1); }

void ExtractArg(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return sqlite3_result_null(ctx);
  if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER)
    return Error(ctx, "EXTRACT_ARG: arg_set_id must be an integer");
  if (sqlite3_value_type(argv[1]) != SQLITE_TEXT) return Error(ctx, "EXTRACT_ARG: key must be a string");
  const auto* storage = static_cast<const TraceStorage*>(sqlite3_user_data(ctx));
  const int64_t id = sqlite3_value_int64(argv[0]);
  if (id < 0 || id >= static_cast<int64_t>(storage->args.set_count())) return sqlite3_result_null(ctx);
  std::vector<Arg> args;
  uint64_t first_row = 0;
  storage->args.Decode(static_cast<uint32_t>(id), &args, &first_row);
  const std::string_view key = Text(argv[1]);
  for (const Arg& arg : args) {
    if (storage->strings.Get(arg.key) != key) continue;
    switch (arg.type) {
      case ArgType::kInt:
      case ArgType::kUint:
      case ArgType::kBool:
        return sqlite3_result_int64(ctx, arg.int_value);
      case ArgType::kString: {
        if (static_cast<StringId>(arg.int_value) == kNullStringId) return sqlite3_result_null(ctx);
        const std::string_view s = storage->strings.Get(static_cast<StringId>(arg.int_value));
        return sqlite3_result_text(ctx, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
      }
      case ArgType::kReal:
        return sqlite3_result_double(ctx, arg.real_value);
    }
  }
  sqlite3_result_null(ctx);
}

void StrSplit(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[1]) != SQLITE_TEXT || Text(argv[1]).empty())
    return Error(ctx, "str_split: delimiter must be a non-empty string");
  if (sqlite3_value_type(argv[2]) != SQLITE_INTEGER || sqlite3_value_int64(argv[2]) < 0)
    return Error(ctx, "str_split: field number must be a non-negative integer");
  if (sqlite3_value_type(argv[0]) != SQLITE_TEXT) return sqlite3_result_null(ctx);
  std::string_view str = Text(argv[0]);
  const std::string_view delim = Text(argv[1]);
  for (int64_t n = sqlite3_value_int64(argv[2]); n > 0; n--) {
    const size_t at = str.find(delim);
    if (at == std::string_view::npos) return sqlite3_result_null(ctx);
    str.remove_prefix(at + delim.size());
  }
  const std::string_view piece = str.substr(0, str.find(delim));
  sqlite3_result_text(ctx, piece.data(), static_cast<int>(piece.size()), SQLITE_TRANSIENT);
}

void Hash(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto add = [&h](const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; i++) {
      h ^= p[i];
      h *= 0x100000001b3ULL;
    }
  };
  for (int i = 0; i < argc; i++) {
    switch (sqlite3_value_type(argv[i])) {
      case SQLITE_INTEGER: {
        const int64_t v = sqlite3_value_int64(argv[i]);
        unsigned char bytes[8];
        for (int b = 0; b < 8; b++) bytes[b] = static_cast<unsigned char>(static_cast<uint64_t>(v) >> (8 * b));
        add(bytes, sizeof(bytes));
        break;
      }
      case SQLITE_TEXT: {
        const std::string_view s = Text(argv[i]);
        add(s.data(), s.size());
        break;
      }
      default:
        return Error(ctx, "HASH: argument " + std::to_string(i + 1) + " is not an integer or a string");
    }
  }
  sqlite3_result_int64(ctx, static_cast<int64_t>(h));
}

// Patterns compiled once per statement: SQLite keeps the compiled one as
// the call's auxiliary data for as long as the pattern argument is constant.
void Regexp(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL)
    return sqlite3_result_null(ctx);
  auto* re = static_cast<std::regex*>(sqlite3_get_auxdata(ctx, 0));
  if (!re) {
    try {
      re = new std::regex(std::string(Text(argv[0])), std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return Error(ctx, "regexp: invalid pattern '" + std::string(Text(argv[0])) + "': " + e.what());
    }
    sqlite3_set_auxdata(ctx, 0, re, [](void* p) { delete static_cast<std::regex*>(p); });
    re = static_cast<std::regex*>(sqlite3_get_auxdata(ctx, 0));
    if (!re) return Error(ctx, "regexp: out of memory");
  }
  const std::string_view text = Text(argv[1]);
  sqlite3_result_int(ctx, std::regex_search(text.begin(), text.end(), *re) ? 1 : 0);
}

// The trace time `ts` on clock `clock_id` (1 REALTIME, 3 MONOTONIC), from
// the trace's clock snapshots as upstream converts: after the last
// snapshot, its value plus the time since; at or before the first, the
// first's value; between two, the earlier one's value plus the time since,
// but never past the later one's value (a clock that stopped meanwhile,
// MONOTONIC in a suspend, does not run ahead of itself). False when the
// clock was never snapshotted.
bool ConvertTraceTime(const TraceStorage& s, int64_t clock_id, int64_t ts, int64_t* out) {
  const ClockSnapshotTable& c = s.clock_snapshot;
  bool have_prev = false, have_next = false;
  int64_t prev_ts = 0, prev_value = 0, next_ts = 0, next_value = 0;
  for (size_t i = 0; i < c.size(); i++) {
    if (c.clock_id[i] != clock_id) continue;
    if (c.ts[i] <= ts && (!have_prev || c.ts[i] >= prev_ts)) {
      have_prev = true;
      prev_ts = c.ts[i];
      prev_value = c.clock_value[i];
    }
    if (c.ts[i] > ts && (!have_next || c.ts[i] < next_ts)) {
      have_next = true;
      next_ts = c.ts[i];
      next_value = c.clock_value[i];
    }
  }
  if (!have_prev && !have_next) return false;
  if (!have_prev) {
    *out = next_value;
  } else if (!have_next) {
    *out = prev_value + (ts - prev_ts);
  } else {
    *out = std::min(prev_value + (ts - prev_ts), next_value);
  }
  return true;
}

// to_realtime(ts), to_monotonic(ts) and abs_time_str(ts); the clock in the
// function's user data. NULL in, NULL out; so for a clock never snapshotted.
template <int64_t kClockId, bool kAsText>
void ClockFunction(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return sqlite3_result_null(ctx);
  if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) return Error(ctx, "the timestamp must be an integer");
  const auto* storage = static_cast<const TraceStorage*>(sqlite3_user_data(ctx));
  int64_t value = 0;
  if (!ConvertTraceTime(*storage, kClockId, sqlite3_value_int64(argv[0]), &value)) return sqlite3_result_null(ctx);
  if (!kAsText) return sqlite3_result_int64(ctx, value);
  // UTC, always 9 digits of nanoseconds: 2026-11-24T02:03:20.110198233.
  const time_t seconds = static_cast<time_t>(value / 1000000000);
  const int64_t nanos = value % 1000000000;
  struct tm tm {};
  if (value < 0 || !gmtime_r(&seconds, &tm)) return sqlite3_result_null(ctx);
  char text[64];
  snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%09lld", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
           tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(nanos));
  sqlite3_result_text(ctx, text, -1, SQLITE_TRANSIENT);
}

// to_timecode(ns): "HH:MM:SS mmm uuu nnn".
void ToTimecode(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return sqlite3_result_null(ctx);
  if (sqlite3_value_type(argv[0]) != SQLITE_INTEGER) return Error(ctx, "to_timecode: the time must be an integer");
  const int64_t ns = sqlite3_value_int64(argv[0]);
  char text[64];
  snprintf(text, sizeof(text), "%02lld:%02lld:%02lld %03lld %03lld %03lld", static_cast<long long>(ns / 3600000000000),
           static_cast<long long>(ns / 60000000000 % 60), static_cast<long long>(ns / 1000000000 % 60),
           static_cast<long long>(ns / 1000000 % 1000), static_cast<long long>(ns / 1000 % 1000),
           static_cast<long long>(ns % 1000));
  sqlite3_result_text(ctx, text, -1, SQLITE_TRANSIENT);
}

// string_agg(x, sep): as group_concat(x, sep); NULL values are skipped.
struct StringAgg {
  std::string* text;  // Null until the first value.
};

void StringAggStep(sqlite3_context* ctx, int, sqlite3_value** argv) {
  auto* agg = static_cast<StringAgg*>(sqlite3_aggregate_context(ctx, sizeof(StringAgg)));
  if (!agg) return sqlite3_result_error_nomem(ctx);
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
  if (!agg->text) {
    agg->text = new std::string();
  } else {
    agg->text->append(Text(argv[1]));
  }
  agg->text->append(Text(argv[0]));
}

void StringAggFinal(sqlite3_context* ctx) {
  auto* agg = static_cast<StringAgg*>(sqlite3_aggregate_context(ctx, 0));
  if (!agg || !agg->text) return sqlite3_result_null(ctx);
  sqlite3_result_text(ctx, agg->text->data(), static_cast<int>(agg->text->size()), SQLITE_TRANSIENT);
  delete agg->text;
  agg->text = nullptr;
}

}  // namespace

Status RegisterBuiltinFunctions(sqlite3* db, const TraceStorage* storage) {
  struct Function {
    const char* name;
    int args;
    void (*fn)(sqlite3_context*, int, sqlite3_value**);
    bool deterministic;
  };
  const Function functions[] = {
      {"extract_arg", 2, ExtractArg, true},
      {"str_split", 3, StrSplit, true},
      {"hash", -1, Hash, true},
      {"regexp", 2, Regexp, true},
      {"to_realtime", 1, ClockFunction<1, false>, true},
      {"to_monotonic", 1, ClockFunction<3, false>, true},
      {"abs_time_str", 1, ClockFunction<1, true>, true},
      {"to_timecode", 1, ToTimecode, true},
  };
  for (const Function& f : functions) {
    const int flags = SQLITE_UTF8 | (f.deterministic ? SQLITE_DETERMINISTIC : 0);
    if (sqlite3_create_function_v2(db, f.name, f.args, flags, const_cast<TraceStorage*>(storage), f.fn, nullptr,
                                   nullptr, nullptr) != SQLITE_OK)
      return Status::Error(std::string("cannot define ") + f.name + "(): " + sqlite3_errmsg(db));
  }
  if (sqlite3_create_function_v2(db, "string_agg", 2, SQLITE_UTF8, nullptr, nullptr, StringAggStep, StringAggFinal,
                                 nullptr) != SQLITE_OK)
    return Status::Error(std::string("cannot define string_agg(): ") + sqlite3_errmsg(db));
  return Status::Ok();
}

}  // namespace sluice
