// A minimal service side for shm tests and benchmarks: moves committed chunks
// out of the SMB (through ReadChunkUntrusted), applies patches, and
// reassembles each writer's packets in chunk-id order. The real central
// buffer is service/trace_buffer.h; this one keeps everything and is simple
// enough to trust as a test oracle.
#ifndef SLUICE_TESTS_SHM_SMB_TEST_CONSUMER_H_
#define SLUICE_TESTS_SHM_SMB_TEST_CONSUMER_H_

#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "shm/commit_data.h"
#include "shm/shm_abi.h"
#include "shm/smb_chunk_reader.h"

namespace sluice::testing {

class SmbTestConsumer : public CommitDataSink {
 public:
  struct StoredChunk {
    ChunkHeader header;
    std::vector<uint8_t> payload;
    int pending_patches = 0;  // Needs-patching chunks wait for has_more=false.
    bool patched_final = false;
  };
  struct Reassembled {
    std::map<uint16_t, std::vector<std::string>> packets;  // Per writer.
    uint64_t broken_chains = 0;  // Fragments discarded (writer dropped data).
    uint64_t unpatched_chunks = 0;
  };

  // async: CommitData only queues; a consumer thread moves chunks later (as a
  // service in another process would).
  SmbTestConsumer(SharedMemoryAbi* abi, bool async = false) : abi_(abi), async_(async) {
    if (async_) thread_ = std::thread([this] { Run(); });
  }
  ~SmbTestConsumer() override { Stop(); }

  void Stop() {
    if (!async_) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void CommitData(const CommitDataRequest& request) override {
    std::unique_lock<std::mutex> lock(mutex_);
    if (async_) {
      pending_.push_back(request);
      cv_.notify_all();
      return;
    }
    ApplyLocked(request);
  }
  void RegisterTraceWriter(uint16_t writer_id, uint32_t target_buffer) override {
    std::lock_guard<std::mutex> lock(mutex_);
    registered_[writer_id] = target_buffer;
    registrations_++;
  }
  void UnregisterTraceWriter(uint16_t writer_id) override {
    std::lock_guard<std::mutex> lock(mutex_);
    registered_.erase(writer_id);
    unregistrations_++;
  }

  // Waits until every queued request has been applied (async mode).
  void Drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return pending_.empty() && !busy_; });
  }

  Reassembled Reassemble() {
    Drain();
    std::lock_guard<std::mutex> lock(mutex_);
    Reassembled out;
    for (auto& [writer, chunks] : chunks_) {
      std::vector<std::string>& packets = out.packets[writer];
      std::string partial;
      bool in_partial = false;
      bool have_prev = false;
      uint32_t prev_id = 0;
      for (auto& [id, c] : chunks) {
        uint16_t flags = c.header.flags();
        bool contiguous = have_prev && id == prev_id + 1;
        if (in_partial && (!contiguous || !(flags & ChunkHeader::kFirstPacketContinuesFromPrevChunk))) {
          out.broken_chains++;
          in_partial = false;
          partial.clear();
        }
        if ((flags & ChunkHeader::kChunkNeedsPatching) && !c.patched_final) out.unpatched_chunks++;
        uint16_t n = c.header.packet_count();
        uint16_t i = 0;
        bool skip_first = !in_partial && (flags & ChunkHeader::kFirstPacketContinuesFromPrevChunk);
        const auto payload_size = static_cast<uint32_t>(c.payload.size());
        ForEachFragment(c.payload.data(), payload_size, n, [&](const uint8_t* data, uint32_t size) {
          bool first = i == 0, last = i + 1 == n;
          i++;
          if (first && skip_first) {
            if (!(last && (flags & ChunkHeader::kLastPacketContinuesOnNextChunk))) out.broken_chains++;
            return;  // Continuation of a packet whose start we lost.
          }
          partial.append(reinterpret_cast<const char*>(data), size);
          if (last && (flags & ChunkHeader::kLastPacketContinuesOnNextChunk)) {
            in_partial = true;
            return;
          }
          packets.push_back(std::move(partial));
          partial.clear();
          in_partial = false;
        });
        if (n == 0 && in_partial) {  // Empty chunk breaks a chain.
          out.broken_chains++;
          in_partial = false;
          partial.clear();
        }
        have_prev = true;
        prev_id = id;
      }
      if (in_partial) out.broken_chains++;
    }
    return out;
  }

  uint64_t abi_violations() {
    std::lock_guard<std::mutex> lock(mutex_);
    return abi_violations_;
  }
  uint64_t patches_applied() {
    std::lock_guard<std::mutex> lock(mutex_);
    return patches_applied_;
  }
  uint64_t chunks_moved() {
    std::lock_guard<std::mutex> lock(mutex_);
    return chunks_moved_;
  }
  uint64_t last_flush_id() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_flush_id_;
  }
  int registrations() {
    std::lock_guard<std::mutex> lock(mutex_);
    return registrations_;
  }
  int unregistrations() {
    std::lock_guard<std::mutex> lock(mutex_);
    return unregistrations_;
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [this] { return stop_ || !pending_.empty(); });
      if (pending_.empty() && stop_) return;
      CommitDataRequest request = std::move(pending_.front());
      pending_.pop_front();
      busy_ = true;
      ApplyLocked(request);
      busy_ = false;
      cv_.notify_all();
    }
  }

  void ApplyLocked(const CommitDataRequest& request) {
    std::vector<uint8_t> buf(kMaxPageSize);
    for (const ChunkToMove& m : request.chunks_to_move) {
      ChunkCopy copy;
      ChunkReadResult r = ReadChunkUntrusted(abi_, m.page, m.chunk, buf.data(),
                                             static_cast<uint32_t>(buf.size()), &copy);
      if (r != ChunkReadResult::kOk) {
        abi_violations_++;
        continue;
      }
      StoredChunk& c = chunks_[copy.header.writer_id][copy.header.chunk_id];
      c.header = copy.header;
      c.payload.assign(buf.data() + sizeof(ChunkHeader),
                       buf.data() + sizeof(ChunkHeader) + copy.used_payload_size);
      chunks_moved_++;
    }
    for (const ChunkPatch& p : request.chunks_to_patch) {
      auto w = chunks_.find(p.writer_id);
      if (w == chunks_.end()) continue;
      auto c = w->second.find(p.chunk_id);
      if (c == w->second.end() || p.offset + 4 > c->second.payload.size()) {
        abi_violations_++;
        continue;
      }
      memcpy(c->second.payload.data() + p.offset, p.data, 4);
      patches_applied_++;
      if (!p.has_more_patches) c->second.patched_final = true;
    }
    if (request.flush_request_id) last_flush_id_ = request.flush_request_id;
  }

  SharedMemoryAbi* abi_;
  bool async_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<CommitDataRequest> pending_;
  bool stop_ = false;
  bool busy_ = false;
  std::thread thread_;
  std::map<uint16_t, std::map<uint32_t, StoredChunk>> chunks_;
  std::map<uint16_t, uint32_t> registered_;
  uint64_t abi_violations_ = 0;
  uint64_t patches_applied_ = 0;
  uint64_t chunks_moved_ = 0;
  uint64_t last_flush_id_ = 0;
  int registrations_ = 0;
  int unregistrations_ = 0;
};

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_SHM_SMB_TEST_CONSUMER_H_
