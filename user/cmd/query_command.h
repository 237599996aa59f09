// `sluice query TRACE`: SQL over a trace file, with the tables Perfetto's
// trace_processor has (user/query/engine/query_engine.h). -q SQL or -f FILE runs a
// script and prints the last statement's result (each one's with --all); with
// neither, an interactive shell (user/cmd/query_shell.h) that also reads
// statements from a pipe; --export FILE writes every table into a SQLite
// file. Several TRACEs, or a directory, run the script on each
// (user/cmd/multi_trace_query.h). docs/QUERY.md describes the command and
// the tables.
//
// Exit status: 0 when everything ran; 1 when a statement failed (one line:
// "sluice query: SQL error at line L column C: <SQLite's message>"), the
// export failed or the output could not be written, or, with several
// traces, any trace failed; 2 for a bad command line or an input (the
// trace, the -f file, a directory without traces) that cannot be read.
#ifndef SLUICE_USER_CMD_QUERY_COMMAND_H_
#define SLUICE_USER_CMD_QUERY_COMMAND_H_

namespace sluice {
int RunQueryCommand(int argc, char** argv);
}  // namespace sluice

#endif  // SLUICE_USER_CMD_QUERY_COMMAND_H_
