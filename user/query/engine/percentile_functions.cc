#include "user/query/engine/percentile_functions.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace sluice {

namespace {

// What P means for each function: its largest value (P is scaled to a
// fraction by dividing by it).
struct PercentileKind {
  const char* name;
  int args;       // 1 for median, whose P is fixed.
  double p_max;   // 100 for percentile(), 1 for percentile_cont().
  double fixed_p; // median's P, as a fraction.
};

constexpr PercentileKind kKinds[] = {
    {"median", 1, 1.0, 0.5},
    {"percentile", 2, 100.0, 0.0},
    {"percentile_cont", 2, 1.0, 0.0},
};

// The aggregate's state between rows. SQLite's aggregate context is zeroed
// memory, so it holds a pointer to this, created at the first row.
struct PercentileState {
  std::vector<double> values;
  double p = -1.0;  // As a fraction; < 0 until the first row with a P.
};

PercentileState* StateOf(sqlite3_context* context, bool create) {
  auto** slot = static_cast<PercentileState**>(
      sqlite3_aggregate_context(context, create ? sizeof(PercentileState*) : 0));
  if (!slot) return nullptr;
  if (!*slot && create) *slot = new PercentileState();
  return *slot;
}

void Fail(sqlite3_context* context, const PercentileKind& kind, const std::string& what) {
  sqlite3_result_error(context, (std::string(kind.name) + "(): " + what).c_str(), -1);
}

bool IsNumeric(sqlite3_value* value) {
  const int type = sqlite3_value_numeric_type(value);
  return type == SQLITE_INTEGER || type == SQLITE_FLOAT;
}

void Step(sqlite3_context* context, int argc, sqlite3_value** argv) {
  const auto& kind = *static_cast<const PercentileKind*>(sqlite3_user_data(context));
  double p = kind.fixed_p;
  if (argc == 2) {
    if (!IsNumeric(argv[1])) return Fail(context, kind, "P is not a number");
    const double given = sqlite3_value_double(argv[1]);
    if (!(given >= 0.0 && given <= kind.p_max)) {
      return Fail(context, kind, kind.p_max == 100.0 ? "P must be between 0 and 100"
                                                     : "P must be between 0 and 1");
    }
    p = given / kind.p_max;
  }
  PercentileState* state = StateOf(context, true);
  if (!state) return sqlite3_result_error_nomem(context);
  // SQLite allows P to wobble by 0.001 on P's own scale.
  if (state->p >= 0.0 && std::fabs(state->p - p) * kind.p_max > 0.001)
    return Fail(context, kind, "P is not the same for all rows");
  state->p = p;
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return;
  if (!IsNumeric(argv[0])) return Fail(context, kind, "an input is not a number");
  const double y = sqlite3_value_double(argv[0]);
  if (std::isinf(y)) return Fail(context, kind, "an input is infinite");
  state->values.push_back(y);
}

void Final(sqlite3_context* context) {
  PercentileState* state = StateOf(context, false);
  if (!state) return;  // No rows: NULL.
  if (!state->values.empty()) sqlite3_result_double(context, InterpolatedPercentile(state->values, state->p));
  delete state;
}

}  // namespace

double InterpolatedPercentile(std::span<double> values, double fraction) {
  const double position = fraction * static_cast<double>(values.size() - 1);
  const auto low = static_cast<size_t>(std::floor(position));
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(low), values.end());
  double result = values[low];
  const double weight = position - static_cast<double>(low);
  if (weight > 0.0 && low + 1 < values.size()) {
    // nth_element leaves the larger values after `low`: the next one up is
    // their minimum.
    result += (*std::min_element(values.begin() + static_cast<ptrdiff_t>(low) + 1, values.end()) - result) * weight;
  }
  return result;
}

Status RegisterPercentileFunctions(sqlite3* db) {
  for (const PercentileKind& kind : kKinds) {
    if (sqlite3_create_function(db, kind.name, kind.args, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                const_cast<PercentileKind*>(&kind), nullptr, Step, Final) != SQLITE_OK)
      return Status::Error(std::string("cannot define ") + kind.name + "(): " + sqlite3_errmsg(db));
  }
  return Status::Ok();
}

}  // namespace sluice
