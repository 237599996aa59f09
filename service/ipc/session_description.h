// SessionInfo (service/service_endpoints.h) to and from its IPC form,
// SessionDescription (protos/sluice/ipc.proto): the consumer port fills
// ListSessions and Attach answers with it, ConsumerIpcClient reads them.
#ifndef SLUICE_SERVICE_IPC_SESSION_DESCRIPTION_H_
#define SLUICE_SERVICE_IPC_SESSION_DESCRIPTION_H_

#include "service/service_endpoints.h"
#include "sluice/ipc.pb.h"

namespace sluice {

void SessionInfoToProto(const SessionInfo& info, protos::SessionDescription* out);
SessionInfo SessionInfoFromProto(const protos::SessionDescription& in);

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_SESSION_DESCRIPTION_H_
