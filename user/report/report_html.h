// A Report as one self-contained HTML page: what `sluice report --html FILE`
// writes. The page is read on air-gapped servers and mailed around, so it
// holds everything it needs: inline CSS and JavaScript, no fonts, images or
// scripts from anywhere else (its Content-Security-Policy forbids them, so a
// browser will not fetch anything even if the page were made to ask).
//
// Layout of the file:
//
//   <head>  CSP, title, <style> (user/report/report_page.css)
//   <body>  <pre id="script-errors">     script errors, written by the page itself
//           <main id="report">           filled by the script
//           <script type="application/json" id="sluice-report-data">
//             ReportToJson(report, kArrays), made safe for a script element
//           <script type="application/json" id="sluice-report-trimmed">
//             {SECTION: {"kept": N, "dropped": M}, ...}  rows left out (below)
//           <script>  user/report/report_page.js: JSON.parse, then the DOM
//
// The data is trace text (thread and slice names are chosen by whoever ran on
// the traced machine), so it only ever reaches the page as JSON inside a
// script element that the browser does not run, and the script writes it
// with textContent. Inside that element every "</" is written "<\/" and
// every "<!--" as "<\u0021--" (both still the same JSON): the HTML parser
// then cannot see an end tag or enter the script's "escaped" states, so no
// name can close the element early.
//
// Size: the page stays under kReportHtmlMaxBytes whatever the trace. The
// SQL files already cap their rows; on top of that, when the data would be
// larger than kReportHtmlMaxDataBytes, whole rows are left out at the end of
// the largest html_* sections first (the pictures' data; the first rows are
// kept), then of the other sections if that is not enough. The page says
// how many rows of which section it left out.
#ifndef SLUICE_USER_REPORT_REPORT_HTML_H_
#define SLUICE_USER_REPORT_REPORT_HTML_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "user/report/report.h"

namespace sluice {

// The bound on the whole page, in bytes.
inline constexpr size_t kReportHtmlMaxBytes = 5'000'000;
// The bound on the embedded data; the rest of kReportHtmlMaxBytes is the
// page's own CSS and script (tens of KiB), with room to spare.
inline constexpr size_t kReportHtmlMaxDataBytes = 4'500'000;

std::string RenderReportHtml(const Report& report);

// `json` with every "</" written "<\/" and every "<!--" "<\u0021--", so that
// it can sit inside a <script> element. Only valid for JSON text, where '<'
// appears inside strings only (there the two escapes mean the same).
std::string EscapeJsonForScriptElement(std::string_view json);

}  // namespace sluice

#endif  // SLUICE_USER_REPORT_REPORT_HTML_H_
