// A Report as one JSON document: what `sluice report --format json` prints
// for scripts, and the data the HTML page embeds.
//
//   {"trace": PATH,
//    "sections": {NAME: {"title": ..., "description": ...,
//                        "columns": [COLUMN, ...],
//                        "rows": [ROW, ...]}, ...}}
//
// Sections keep the report's order. A ROW is an object keyed by column name
// (kObjects, for scripts: jq '.sections.cpu_by_thread.rows[0].cpu_s') or an
// array in column order (kArrays, smaller, for the page). Values are written
// as `sluice query --format json` writes them: NULL null, integers and reals
// as numbers (±infinity ±9e999, NaN null), text as strings.
#ifndef SLUICE_USER_REPORT_REPORT_JSON_H_
#define SLUICE_USER_REPORT_REPORT_JSON_H_

#include <string>
#include <vector>

#include "user/report/report.h"

namespace sluice {

enum class ReportJsonRows { kObjects, kArrays };

std::string ReportToJson(const Report& report, ReportJsonRows rows);

// One ROW of `section` exactly as ReportToJson writes it, for callers that
// weigh rows before choosing which to keep (report_html.cc bounds its page).
std::string ReportRowToJson(const ReportSection& section, const std::vector<ReportCell>& row,
                            ReportJsonRows rows);

}  // namespace sluice

#endif  // SLUICE_USER_REPORT_REPORT_JSON_H_
