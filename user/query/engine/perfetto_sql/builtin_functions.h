// The Trace Processor's helper functions that SQLite lacks, in C++ over
// the imported trace (docs/QUERY.md, "PerfettoSQL"):
//
//   EXTRACT_ARG(arg_set_id, key)  the value of `key` in that arg set, typed
//                                 (int, string or real), NULL if absent
//   STR_SPLIT(str, delim, n)      the n-th (0-based) piece of str split at
//                                 the literal delim, NULL past the last
//   HASH(v, ...)                  64-bit FNV-1a over the values (integers as
//                                 their 8 little-endian bytes, text as its
//                                 bytes), as a signed integer
//   regexp(pattern, text)         1 if the ECMAScript pattern matches
//                                 anywhere in text (`text REGEXP pattern`)
//   string_agg(x, sep)            group_concat(x, sep): SQLite 3.40 has no
//                                 string_agg
//   to_realtime(ts), to_monotonic(ts), abs_time_str(ts)
//                                 trace time on the REALTIME or MONOTONIC
//                                 clock, from the trace's clock snapshots
//                                 (abs_time_str: as UTC ISO 8601 text)
//   to_timecode(ns)               "HH:MM:SS mmm uuu nnn"
//
// Each follows upstream's documented behaviour, errors included (a NULL
// or REAL given to HASH, an empty delimiter, a bad pattern): the tests in
// tests/user/query/engine/perfetto_sql/ compare them with upstream's
// answers on the same input.
#ifndef SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_BUILTIN_FUNCTIONS_H_
#define SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_BUILTIN_FUNCTIONS_H_

#include "shm/base/status.h"

struct sqlite3;

namespace sluice {

struct TraceStorage;

// Defines them on `db`; `storage` (for EXTRACT_ARG) must outlive it.
Status RegisterBuiltinFunctions(sqlite3* db, const TraceStorage* storage);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_PERFETTO_SQL_BUILTIN_FUNCTIONS_H_
