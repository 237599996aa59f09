// Matching of the regexes a TraceConfig holds (producer_name_regex_filter,
// TriggerConfig.Trigger.producer_name_regex) against producer names: POSIX
// extended regexes, as upstream documents them, matched in full. libc's
// regcomp(3), not <regex> (which GCC 12 cannot build under ASan with -Werror).
#ifndef SLUICE_SERVICE_REGEX_MATCH_H_
#define SLUICE_SERVICE_REGEX_MATCH_H_

#include <string>

namespace sluice {

// Full match of `text` against a POSIX extended regex. False if the pattern
// does not compile (*valid = false then).
bool RegexFullMatch(const std::string& pattern, const std::string& text, bool* valid = nullptr);

}  // namespace sluice

#endif  // SLUICE_SERVICE_REGEX_MATCH_H_
