// `sluice export TRACE... --clickhouse URL`: the tables of each trace loaded
// into a ClickHouse database shared by a fleet's traces (ClickHouseExporter;
// docs/FLEET.md). A trace that fails is named on stderr and the others still
// load; the exit status is 1 if any failed, 2 for bad arguments.
#ifndef SLUICE_USER_CMD_EXPORT_COMMAND_H_
#define SLUICE_USER_CMD_EXPORT_COMMAND_H_

namespace sluice {
int RunExportCommand(int argc, char** argv);
}  // namespace sluice

#endif  // SLUICE_USER_CMD_EXPORT_COMMAND_H_
