// The aggregate functions of SQLite's percentile extension, which Debian's
// SQLite (3.40) does not build: median(Y), percentile(Y, P) with P from 0 to
// 100, and percentile_cont(Y, P) with P from 0 to 1. They follow SQLite's
// documented rules, so SQL written for sluice runs on a newer SQLite too:
//   - NULL inputs are ignored; no other inputs gives NULL;
//   - the result interpolates between the two nearest inputs: with the n
//     inputs sorted, position (n - 1) * P / 100;
//   - an input that is not a number, an infinite input, a P out of range or a
//     P that changes between rows (by more than 0.001) is an error.
// They hold every input (O(N) memory) and select in O(N) at the end.
// `sluice report`'s scheduling-latency section uses them.
#ifndef SLUICE_USER_QUERY_ENGINE_PERCENTILE_FUNCTIONS_H_
#define SLUICE_USER_QUERY_ENGINE_PERCENTILE_FUNCTIONS_H_

#include <span>

#include "shm/base/status.h"

struct sqlite3;

namespace sluice {

Status RegisterPercentileFunctions(sqlite3* db);

// The percentile at `fraction` (0..1) of `values`, interpolated as above;
// reorders `values`, which must not be empty.
double InterpolatedPercentile(std::span<double> values, double fraction);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_PERCENTILE_FUNCTIONS_H_
