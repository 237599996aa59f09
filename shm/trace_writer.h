// TraceWriter: what a data source writes TracePackets through.
//
// One TraceWriter is one *sequence*: an ordered stream of packets from one
// writer, which the service keeps in order and stamps with one
// trusted_packet_sequence_id. Data sources hold one per thread that writes
// (the ftrace source: one per CPU).
//
// Thread-safety: none, by design. A TraceWriter is used by one thread at a
// time; handing it to another thread needs a happens-before edge (a mutex, a
// thread join) like any other non-thread-safe object. This is what makes the
// hot path free of atomics except when a chunk changes hands.
//
// Usage:
//   auto packet = writer->NewTracePacket();
//   packet->WriteVarInt(TracePacket::kTimestampFieldNumber, ts);
//   packet->BeginNested(TracePacket::kFtraceEventsFieldNumber);
//   ...
//   packet->EndNested();
//   // The packet ends when the handle is destroyed or Finalize() is called.
//
// Implementations: SmbTraceWriter (shm/smb_trace_writer.h) writes into the
// producer's shared memory; HeapTraceWriter (below) keeps packets in memory for
// tests and tools.
#ifndef SLUICE_SHM_TRACE_WRITER_H_
#define SLUICE_SHM_TRACE_WRITER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "shm/proto_writer.h"

namespace sluice {

// TracePacket fields the TraceWriter itself writes (upstream
// protos/perfetto/trace/trace_packet.proto; checked against the generated
// code in tests/shm/trace_writer_test.cc).
inline constexpr uint32_t kTracePacketPreviousPacketDroppedField = 42;
inline constexpr uint32_t kTracePacketFirstPacketOnSequenceField = 87;

class TraceWriter {
 public:
  // RAII handle for one packet in progress. Movable, not copyable.
  class Packet {
   public:
    Packet() = default;
    explicit Packet(TraceWriter* owner, ProtoWriter* writer)
        : owner_(owner), writer_(writer) {}
    Packet(Packet&& other) noexcept
        : owner_(std::exchange(other.owner_, nullptr)),
          writer_(std::exchange(other.writer_, nullptr)) {}
    Packet& operator=(Packet&& other) noexcept {
      Finalize();
      owner_ = std::exchange(other.owner_, nullptr);
      writer_ = std::exchange(other.writer_, nullptr);
      return *this;
    }
    Packet(const Packet&) = delete;
    Packet& operator=(const Packet&) = delete;
    ~Packet() { Finalize(); }

    ProtoWriter* operator->() { return writer_; }
    ProtoWriter* writer() { return writer_; }
    void Finalize() {
      if (owner_) std::exchange(owner_, nullptr)->EndPacket();
    }

   private:
    TraceWriter* owner_ = nullptr;
    ProtoWriter* writer_ = nullptr;
  };

  virtual ~TraceWriter() = default;

  // Starts a packet. The previous one must have been finalized.
  Packet NewTracePacket() { return Packet(this, BeginPacket()); }

  // Hands everything written so far to the service, including a partly filled
  // chunk, so that it becomes readable. Not for every packet: it costs a
  // chunk's tail and a message to the service. Inside a FlushBatch on this
  // thread the message goes at the batch's end (SharedMemoryArbiter).
  virtual void Flush() = 0;

  // The writer id, unique among the producer's live writers (1..1023).
  virtual uint16_t writer_id() const = 0;

  // Packets lost in this writer (no buffer space, or dropped after misuse).
  virtual uint64_t packets_lost() const = 0;

  // About how many bytes, up to `up_to`, could be written now without
  // waiting for buffer space or dropping. A hint: nothing is reserved. A
  // data source whose source can hold its data asks before taking more of
  // it (the ftrace and BPF readers: user/probes/ftrace/
  // ftrace_reader_worker.h, "A full SMB"). Writers without a bounded
  // buffer always have room.
  virtual uint64_t RoomBytes(uint64_t up_to) const { return up_to; }

 protected:
  virtual ProtoWriter* BeginPacket() = 0;
  virtual void EndPacket() = 0;
};

// Keeps each packet as a string. Off the hot path: for tests, tools and the
// service's own packets. Marks the first packet with first_packet_on_sequence
// like the SMB writer does.
class HeapTraceWriter : public TraceWriter {
 public:
  explicit HeapTraceWriter(uint16_t writer_id = 1) : writer_id_(writer_id) {}

  void Flush() override {}
  uint16_t writer_id() const override { return writer_id_; }
  uint64_t packets_lost() const override { return 0; }

  const std::vector<std::string>& packets() const { return packets_; }
  std::vector<std::string> TakePackets() { return std::exchange(packets_, {}); }

 protected:
  ProtoWriter* BeginPacket() override;
  void EndPacket() override;

 private:
  uint16_t writer_id_;
  bool first_packet_ = true;
  HeapProtoWriter heap_;
  std::vector<std::string> packets_;
};

}  // namespace sluice

#endif  // SLUICE_SHM_TRACE_WRITER_H_
