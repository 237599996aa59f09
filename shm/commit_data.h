// CommitData: what the producer tells the service about its SMB.
//
// The producer's SharedMemoryArbiter batches these; the service's
// implementation of CommitDataSink moves each listed chunk into a central
// buffer and applies each patch. Across processes the same request travels as
// sluice.protos.CommitDataRequest (protos/sluice/ipc.proto); in one process
// (`sluice record`) it is a direct call. docs/ABI.md describes the protocol.
//
// Order matters and is kept: a patch for a chunk is never delivered before the
// move of that chunk (both go through one FIFO in the arbiter, and within one
// request moves are applied before patches).
#ifndef SLUICE_SHM_COMMIT_DATA_H_
#define SLUICE_SHM_COMMIT_DATA_H_

#include <cstdint>
#include <vector>

namespace sluice {

struct ChunkToMove {
  uint32_t page = 0;
  uint32_t chunk = 0;
  // Index of the config's buffers {} entry (DataSourceConfig.target_buffer).
  uint32_t target_buffer = 0;
};

struct ChunkPatch {
  uint32_t target_buffer = 0;
  uint16_t writer_id = 0;
  uint32_t chunk_id = 0;
  // Offset from the start of the chunk's payload (after ChunkHeader).
  uint32_t offset = 0;
  uint8_t data[4] = {};
  // False when this is the last patch the chunk waits for.
  bool has_more_patches = false;
};

struct CommitDataRequest {
  std::vector<ChunkToMove> chunks_to_move;
  std::vector<ChunkPatch> chunks_to_patch;
  // Non-zero when this commit answers a Flush(request id) from the service.
  uint64_t flush_request_id = 0;

  bool empty() const { return chunks_to_move.empty() && chunks_to_patch.empty(); }
  void clear() {
    chunks_to_move.clear();
    chunks_to_patch.clear();
    flush_request_id = 0;
  }
};

// Implemented by the service side (in-process) or by the producer's IPC client
// (which forwards to sluiced). Called from any producer thread, one call at a
// time (the arbiter serialises them).
class CommitDataSink {
 public:
  virtual ~CommitDataSink() = default;
  virtual void CommitData(const CommitDataRequest& request) = 0;
  // A writer was created / is gone. The service keeps the writer -> buffer map
  // so that it can recover the Complete chunks of a producer that died before
  // committing them. Unregister comes after the writer's last commit.
  virtual void RegisterTraceWriter(uint16_t writer_id, uint32_t target_buffer) = 0;
  virtual void UnregisterTraceWriter(uint16_t writer_id) = 0;
};

}  // namespace sluice

#endif  // SLUICE_SHM_COMMIT_DATA_H_
