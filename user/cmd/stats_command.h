// `sluice stats TRACE`: the trace's loss and health figures, like Perfetto's
// `select * from stats where severity = 'data_loss'`, with what each non-zero
// figure means and which knob fixes it. Exits 1 when any data_loss figure is
// non-zero (for scripts and CI), 2 when the file cannot be read.
#ifndef SLUICE_USER_CMD_STATS_COMMAND_H_
#define SLUICE_USER_CMD_STATS_COMMAND_H_

namespace sluice {
int RunStatsCommand(int argc, char** argv);
}  // namespace sluice

#endif  // SLUICE_USER_CMD_STATS_COMMAND_H_
