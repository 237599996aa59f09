// Conversions between the producer's in-memory commit structures
// (shm/commit_data.h) and their IPC form (protos/sluice/ipc.proto), used by
// both ends of the producer socket.
//
// Writer (un)registrations travel as ProducerToService fields 8 and 9
// (protos/sluice/service_extra.proto) until ipc.proto's oneof has them; the
// functions below are the only code that knows how they are carried.
#ifndef SLUICE_SERVICE_IPC_IPC_PRODUCER_PROTOCOL_H_
#define SLUICE_SERVICE_IPC_IPC_PRODUCER_PROTOCOL_H_

#include <cstdint>

#include "service/service_endpoints.h"
#include "shm/commit_data.h"
#include "sluice/ipc.pb.h"

namespace sluice {

inline constexpr int kRegisterTraceWriterField = 8;
inline constexpr int kUnregisterTraceWriterField = 9;

// Producer side. Consecutive patches of one chunk share one ChunkToPatch.
void CommitDataToProto(const CommitDataRequest& request, protos::CommitDataRequest* out);

// Service side. Untrusted input: an entry that cannot be represented (a patch
// whose data is not 4 bytes, a writer id above 16 bits) is left out and
// counted in *malformed. Patches of one ChunkToPatch keep their order; all but
// the last get has_more_patches = true, the last the message's flag.
void CommitDataFromProto(const protos::CommitDataRequest& msg, CommitDataRequest* out,
                         uint32_t* malformed);

// Writer events in a ProducerToService envelope.
void SetRegisterTraceWriter(protos::ProducerToService* msg, uint16_t writer_id,
                            uint32_t target_buffer);
void SetUnregisterTraceWriter(protos::ProducerToService* msg, uint16_t writer_id);

struct WriterEvent {
  enum Kind { kNone, kRegister, kUnregister, kMalformed } kind = kNone;
  uint32_t writer_id = 0;
  uint32_t target_buffer = 0;
};
// The writer event carried by `msg` (kNone if it carries none).
WriterEvent GetWriterEvent(const protos::ProducerToService& msg);

// Service side: a request that maps one to one onto a ProducerEndpoint call
// (RegisterDataSource, UnregisterDataSource, DataSourceStarted/Stopped,
// NotifyFlushComplete, ActivateTriggers) is made on `endpoint`. False for
// any other message (InitializeConnection, CommitData, none): the caller's.
// The producer port and the relay server (a guest producer's requests) both
// take them this way.
bool ForwardProducerRequest(const protos::ProducerToService& msg, ProducerEndpoint* endpoint);

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_IPC_PRODUCER_PROTOCOL_H_
