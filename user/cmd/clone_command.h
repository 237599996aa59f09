// `sluice clone KEY -o FILE`: a snapshot of a running session, Perfetto's
// `perfetto --clone`. sluiced flushes the session's producers (so the copy
// holds their data up to the request), copies its buffers into a new ended
// session of this client's (TraceBuffer::CloneReadOnly), and this command
// reads that copy into FILE. The session goes on recording, undisturbed: a
// later clone, or its stop, still holds everything not overwritten.
#ifndef SLUICE_USER_CMD_CLONE_COMMAND_H_
#define SLUICE_USER_CMD_CLONE_COMMAND_H_

namespace sluice {
int RunCloneCommand(int argc, char** argv);
}  // namespace sluice

#endif  // SLUICE_USER_CMD_CLONE_COMMAND_H_
