// `sluice report TRACE`: one screen that answers the usual questions about a
// trace (span and size, losses with their fix, CPU time by process and
// thread, CPU utilization, scheduling latency, slices, counters), as text,
// JSON or a self-contained HTML page. Each section is an SQL file shipped
// with sluice (user/report/sql/) that `sluice query -f` runs too.
#ifndef SLUICE_USER_CMD_REPORT_COMMAND_H_
#define SLUICE_USER_CMD_REPORT_COMMAND_H_

namespace sluice {

int RunReportCommand(int argc, char** argv);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_REPORT_COMMAND_H_
