// Query results as upstream Perfetto's `trace_processor_shell -q FILE TRACE`
// prints them, so that sluice's QueryEngine can be compared byte for byte
// with the expected outputs in tests/data/query/expected/ (which that shell
// wrote, see tests/data/query/refresh_expected.sh).
//
// The shell's CSV (Perfetto v58, src/trace_processor/shell/query.cc) is not
// RFC 4180: nothing is escaped.
//   header   every column name in double quotes, comma-separated, then '\n';
//            printed even when the statement returns no row
//   NULL     "[NULL]" (with the quotes)
//   integer  printf "%" PRId64
//   real     printf "%f" (six decimals: 1.000000, 4294967295.000000)
//   text     the bytes in double quotes, unescaped: a '"' or '\n' inside the
//            text is printed as is (trace_marker writes end in '\n')
//   blob     "<raw bytes>"
// A file with several statements prints one such table per statement that
// returns columns, separated by an empty line.
#ifndef SLUICE_TESTS_USER_QUERY_QUERY_CSV_TEST_UTIL_H_
#define SLUICE_TESTS_USER_QUERY_QUERY_CSV_TEST_UTIL_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "shm/base/status.h"

struct sqlite3;

namespace sluice {
class SqlDialect;
}

namespace sluice::testing {

// Runs every statement of `sql` on `db` and returns what the shell would
// print. Fails with SQLite's message (and the statement's start) when a
// statement does not compile or fails while stepping.
// With a `dialect` (QueryEngine::dialect()), PerfettoSQL too.
StatusOr<std::string> QueryToTraceProcessorCsv(sqlite3* db, std::string_view sql, SqlDialect* dialect = nullptr);

// A short readable account of how `actual` differs from `expected` (line
// counts, then up to `max_lines` differing lines with their numbers, each
// cut to 200 characters); empty when they are equal.
std::string DescribeCsvDifference(std::string_view expected, std::string_view actual,
                                  size_t max_lines = 6);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_USER_QUERY_QUERY_CSV_TEST_UTIL_H_
