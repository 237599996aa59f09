// `sluice query` over many traces: `sluice query A.pftrace B.pftrace -q SQL`
// or `sluice query DIR -q SQL` runs the same script on every trace and prints
// one result per printed statement, a `trace` column first. docs/QUERY.md,
// "Many traces", is the user's description; this is how it runs.
//
//   operands ──ExpandTraceOperands──▶ traces T0 T1 T2 ... in the order named
//                                        │ EstimateImportBytes: each one's need
//                                        ▼
//   workers, at most min(--jobs or the CPUs, the traces) threads; a worker
//   takes the next trace in order when its need fits in the memory budget
//   (or nothing else runs), then:
//     QueryEngine::Open → RunSqlScript → rows captured → engine freed
//                                        │ slot i done
//                                        ▼
//   the printer (the calling thread) takes slot 0, 1, 2, ... in order, not in
//   the order they finish: a failed trace is one line on stderr
//   ("sluice query: T1: <why>"), a good one's rows go out under the trace
//   column. The first printed result streams as the slots come in; with
//   --all the later ones are held until every trace has answered.
//
// A trace adds rows only if it answered every statement: one whose import
// or script fails, or whose result has other columns than the first good
// trace's (the reference), is an error and adds none. Exit status: 0 when
// every trace answered, 1 when any failed (the others' rows are printed).
//
// Threads, not processes: the import and the engine are safe to run on
// several threads at once, each on its own trace.
//   - Each QueryEngine owns its TraceStorage, its tables and its SQLite
//     connection to a private ":memory:" database, opened NOMUTEX (SQLite's
//     multi-thread mode: safe as long as no connection is used by two threads
//     at once; each engine lives on one worker). Functions, modules and the
//     PerfettoSQL dialect are registered per connection.
//   - SQLite itself must be built thread-safe (Debian's libsqlite3 is,
//     SQLITE_THREADSAFE=1): sqlite3_threadsafe() is checked, and a build
//     without threads gets one trace at a time. Its one process-wide lock on
//     the way is the allocation count's (SQLITE_CONFIG_MEMSTATUS), taken on
//     every sqlite3_malloc and free: with it, two threads ran little faster
//     than one (4316 voluntary context switches for 20 traces, 54 without),
//     so the runner turns the count off before SQLite's first use.
//   - Process-wide state the import and the engine touch: the sqlite3_module
//     tables are const; the standard-library module list is a function-local
//     static (initialised once, thread-safely, read-only after); the compact
//     sched decoder's scratch columns and the zstd decoder's context are
//     thread_local; protobuf's generated parsers keep no shared state; time
//     formatting uses gmtime_r; error messages use strerror, MT-safe in glibc
//     since 2.32 (Debian 12 has 2.36). getopt is not thread-safe and runs
//     before any worker starts.
// tests/user/cmd/multi_trace_query_test.cc runs them under TSan
// (make SANITIZE=thread).
//
// Memory: each import holds a whole trace's tables until its script has run,
// about EstimateImportBytes(path). The budget is what the system (and the
// cgroup, if it sets a limit) has available when the command starts; the
// workers never hold more than that between them, except one trace alone,
// which runs whatever its estimate. Rows captured and not yet printed count
// against the budget too. When a worker must wait for memory, stderr says so
// once.
#ifndef SLUICE_USER_CMD_MULTI_TRACE_QUERY_H_
#define SLUICE_USER_CMD_MULTI_TRACE_QUERY_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "shm/base/status.h"
#include "user/query/engine/query_output.h"

namespace sluice {

// Whether `operands` name many traces: more than one, or a directory. One
// trace file keeps the one-trace command (no trace column).
bool NamesManyTraces(const std::vector<std::string>& operands);

// The traces `operands` name, in order. A file (or anything that is not a
// directory, so that a missing one fails by name later) stands for itself. A
// directory stands for the trace files directly in it, sorted by name
// (bytewise), each as DIR/NAME: regular files (symlinks to them too) whose
// first byte is 0x0a, a Trace.packet record's tag, as every Perfetto trace
// file's is. Names starting with '.' are left out; other entries (empty
// files, files that are not traces, subdirectories, FIFOs) are skipped, and
// `notes` gets one line per directory naming them. A file that cannot be
// opened is kept, to fail by name. Fails for a directory that cannot be
// read or holds no trace file.
StatusOr<std::vector<std::string>> ExpandTraceOperands(const std::vector<std::string>& operands,
                                                       std::vector<std::string>* notes);

// What importing the trace at `path` holds at its peak, in bytes: a fixed
// part plus a multiple of the file's size, a larger one for the bytes in
// zlib compressed_packets (the multiples were measured on sluice's traces;
// the .cc says where). Walks the first records' headers to tell the two
// apart; the size alone if the file cannot be read.
uint64_t EstimateImportBytes(const std::string& path);

// The memory budget: MemAvailable from /proc/meminfo, or less if this
// process's cgroup (v2 memory.max, v1 memory.limit_in_bytes) leaves less.
uint64_t AvailableMemoryBytes();
// MemAvailable's bytes in a /proc/meminfo text; 0 if it has none.
uint64_t ParseMemAvailable(std::string_view meminfo);

// The CPUs this process may run on (sched_getaffinity), at least 1.
int UsableCpus();

// One printed statement's result of one trace: its column names and its rows,
// each cell encoded as [SQLite type byte][varint length][text as printed].
struct CapturedResult {
  std::vector<std::string> columns;
  std::string cells;
  uint64_t rows = 0;
  uint64_t HeldBytes() const;
};

// A trace's answer: its results (those a one-trace run would print), or why
// it has none.
struct TraceAnswer {
  Status status;  // The message without the "sluice query: " prefix.
  std::vector<CapturedResult> results;
  double import_seconds = 0;
  double script_seconds = 0;
  double cpu_seconds = 0;  // The worker thread's, import and script.
};

// Imports `path` and runs `script` on it, capturing what `sluice query PATH
// -q SCRIPT [--all]` would print.
TraceAnswer AnswerTrace(const std::string& path, const std::string& script, bool all);

struct MultiTraceQueryOptions {
  std::vector<std::string> traces;  // ExpandTraceOperands' list.
  std::string script;
  bool all = false;
  OutputFormat format = OutputFormat::kTable;
  bool timing = false;  // Each trace's times and the whole run's on stderr.
  int jobs = 0;              // Traces at once, at most; 0: UsableCpus().
  uint64_t memory_bytes = 0;  // The budget; 0: AvailableMemoryBytes().
  // Answers one trace; empty: AnswerTrace(path, script, all). Tests put
  // their own here (a slow trace, another script for one trace).
  std::function<TraceAnswer(size_t index, const std::string& path)> answer;
};

// Runs options.script on every trace and writes the result to `out`, the
// failed traces and the notes to `err`. Returns 0 when every trace answered,
// 1 when any failed.
int RunMultiTraceQuery(const MultiTraceQueryOptions& options, FILE* out, FILE* err);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_MULTI_TRACE_QUERY_H_
