// `sluice sessions`: the tracing sessions running in sluiced, like
// `perfetto --query`'s session table: each session's key, owner, state
// (recording, stopping, ended; attached or detached; a clone), its config
// in one line (buffers, data sources, how the file is written), how full
// its buffers are, the losses so far and where its trace goes. Sessions of
// other users are listed to root only (sluiced checks the caller's uid).
#ifndef SLUICE_USER_CMD_SESSIONS_COMMAND_H_
#define SLUICE_USER_CMD_SESSIONS_COMMAND_H_

#include <string>

#include "service/service_endpoints.h"

namespace sluice {

int RunSessionsCommand(int argc, char** argv);

// The listing `sluice sessions` prints (a few lines a session).
std::string FormatSessionList(const SessionList& list);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_SESSIONS_COMMAND_H_
