// FreeingCommitSink: the service's side of an SMB reduced to freeing each
// committed chunk at once, without copying it anywhere. Benchmarks that
// measure a producer alone (TraceWriter, BPF decode) commit into it.
#ifndef SLUICE_TESTS_BENCH_FREEING_COMMIT_SINK_H_
#define SLUICE_TESTS_BENCH_FREEING_COMMIT_SINK_H_

#include "shm/commit_data.h"
#include "shm/shm_abi.h"

namespace sluice {

class FreeingCommitSink : public CommitDataSink {
 public:
  explicit FreeingCommitSink(SharedMemoryAbi* abi) : abi_(abi) {}
  void CommitData(const CommitDataRequest& request) override {
    for (const ChunkToMove& m : request.chunks_to_move) {
      PageLayout layout;
      if (abi_->TryAcquireChunkForReading(m.page, m.chunk, &layout) ==
          SharedMemoryAbi::AcquireResult::kOk) {
        abi_->ReleaseChunkAsFree(m.page, m.chunk);
      }
    }
  }
  void RegisterTraceWriter(uint16_t, uint32_t) override {}
  void UnregisterTraceWriter(uint16_t) override {}

 private:
  SharedMemoryAbi* abi_;
};

}  // namespace sluice

#endif  // SLUICE_TESTS_BENCH_FREEING_COMMIT_SINK_H_
