// AtraceLine: one trace_marker write in atrace's text format, as Android's
// Trace.beginSection() and friends (and programs doing the same by hand)
// write it, parsed the way Perfetto's trace processor parses it:
//
//   B|tgid|name            begin a slice on the writing thread
//   E|tgid  (or E)         end the thread's innermost slice
//   C|tgid|name|value[|x]  counter of the process (an integer value)
//   S|tgid|name|cookie     begin an async slice of the process
//   F|tgid|name|cookie     end it
//   I|tgid|name            instant on the writing thread
//   N|tgid|track|name      instant on a named track of the process
//   G|tgid|track|name|cookie   begin an async slice on a named track
//   H|tgid|track|[name|]cookie end it
//
// Anything else is not atrace (kNotAtrace: stays a plain print event and
// counts as Perfetto's systrace_parse_failure), except the
// "trace_event_clock_sync:" lines Chrome writes (kIgnored).
#ifndef SLUICE_USER_QUERY_IMPORTER_ATRACE_LINE_H_
#define SLUICE_USER_QUERY_IMPORTER_ATRACE_LINE_H_

#include <cstdint>
#include <string_view>

namespace sluice {

struct AtraceLine {
  char phase = 0;
  uint32_t tgid = 0;       // 0 when absent (E without a tgid)
  std::string_view name;   // B, C, S, F, I, N, G (slice or counter name)
  std::string_view track;  // N, G, H (track name)
  int64_t value = 0;       // C: the value; S, F, G, H: the cookie
};

enum class AtraceParse { kOk, kNotAtrace, kIgnored };

// Views in `out` point into `text`.
AtraceParse ParseAtraceLine(std::string_view text, AtraceLine* out);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_ATRACE_LINE_H_
