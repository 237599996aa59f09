// A Report for a terminal: the trace's figures on two lines, then each
// section's title and its rows as `sluice query` prints a table. Empty
// sections say what their emptiness means ("nothing lost").
#ifndef SLUICE_USER_REPORT_REPORT_TEXT_H_
#define SLUICE_USER_REPORT_REPORT_TEXT_H_

#include <cstdio>

#include "user/report/report.h"

namespace sluice {

void WriteReportText(const Report& report, FILE* out);

}  // namespace sluice

#endif  // SLUICE_USER_REPORT_REPORT_TEXT_H_
