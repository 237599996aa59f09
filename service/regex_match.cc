#include "service/regex_match.h"

#include <regex.h>

namespace sluice {

bool RegexFullMatch(const std::string& pattern, const std::string& text, bool* valid) {
  regex_t re;
  std::string anchored = "^(" + pattern + ")$";
  if (regcomp(&re, anchored.c_str(), REG_EXTENDED | REG_NOSUB) != 0) {
    if (valid) *valid = false;
    return false;
  }
  if (valid) *valid = true;
  bool match = regexec(&re, text.c_str(), 0, nullptr, 0) == 0;
  regfree(&re);
  return match;
}

}  // namespace sluice
