// A TraceSummary (trace_summary.h) as text, the way trace_processor_shell
// --summary-format text prints it, so that the two can be compared byte for
// byte:
//   - fields in the order upstream writes them, which is not field-number
//     order: a summary's bundles before its metadata; a bundle's id, its
//     specs, then its rows; a row's dimensions before its values;
//   - every other message's fields in field-number order. Upstream echoes a
//     spec's fields as they were written in the spec's text, which is the
//     same when the spec is written in field-number order;
//   - two spaces of indent per level, `name: value`, `name {` ... `}`, an
//     empty message as `name {` and `}` on two lines;
//   - doubles with six decimals (printf %f), enums by name, bools as
//     true/false, strings in double quotes with \a \b \f \n \r \t \v \\ \'
//     \" escaped and bytes outside 0x20..0x7e as three octal digits;
//   - no newline after the last line (nothing at all for an empty summary).
#ifndef SLUICE_USER_QUERY_SUMMARY_TRACE_SUMMARY_TEXT_H_
#define SLUICE_USER_QUERY_SUMMARY_TRACE_SUMMARY_TEXT_H_

#include <string>

#include "perfetto/trace_summary/file.pb.h"

namespace sluice {

std::string TraceSummaryText(const perfetto::protos::TraceSummary& summary);

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_SUMMARY_TRACE_SUMMARY_TEXT_H_
