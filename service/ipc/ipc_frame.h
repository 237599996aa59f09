// IPC framing: how sluice's protobuf envelopes travel over a byte stream.
//
// Every message on a producer or consumer socket is one frame:
//
//   ┌────────────────────────┬──────────────────────────────────────────┐
//   │ length: uint32 LE (4 B)│ envelope: `length` bytes of one          │
//   │                        │ ProducerToService / ServiceToProducer /  │
//   │                        │ ConsumerToService / ServiceToConsumer    │
//   └────────────────────────┴──────────────────────────────────────────┘
//
// The receiver trusts nothing: a length above its limit (kMaxFrameSize,
// 4 MiB) or a zero length is a protocol error and the connection is closed.
// File descriptors travel as SCM_RIGHTS ancillary data on the first byte of
// the frame that uses them; they are queued separately (see IpcSocket) and a
// message that expects one takes the oldest. docs/IPC.md has the full
// protocol.
//
// FrameReader is a plain byte-stream splitter with no I/O, so tests and the
// fuzzer (tests/fuzz/ipc_frame_fuzzer.cc) feed it arbitrary bytes.
#ifndef SLUICE_SERVICE_IPC_IPC_FRAME_H_
#define SLUICE_SERVICE_IPC_IPC_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

inline constexpr uint32_t kFrameHeaderSize = 4;
// Largest envelope either side accepts. ReadBuffers answers are split into
// frames well below this (kReadBuffersSliceBytes in service/ipc/ipc_consumer_port.h).
inline constexpr uint32_t kMaxFrameSize = 4u << 20;
// Protocol version in InitializeConnection / InitializeConnectionResponse.
inline constexpr uint32_t kIpcVersion = 1;

// Appends one frame holding `payload` to *out.
void AppendFrame(std::string_view payload, std::string* out);

// Splits a byte stream into frames.
//
// Usage: get room with WritableSpace(), read(2) into it, CommitWritten(n),
// then call NextFrame() until it returns kNeedMore. Frame views stay valid
// until the next call to WritableSpace() or Append().
class FrameReader {
 public:
  enum class Result { kFrame, kNeedMore, kError };

  explicit FrameReader(uint32_t max_frame_size = kMaxFrameSize)
      : max_frame_size_(max_frame_size) {}

  // Room for at least `min_bytes` more input; compacts consumed bytes first.
  uint8_t* WritableSpace(size_t min_bytes, size_t* available);
  void CommitWritten(size_t n) { end_ += n; }
  // Copies bytes in (tests, fuzzers).
  void Append(const uint8_t* data, size_t size);

  // kFrame: *frame is the next envelope. kError: the stream is broken (bad
  // length); the caller drops the connection. Sticky once returned.
  Result NextFrame(std::string_view* frame);

  bool broken() const { return broken_; }
  size_t buffered_bytes() const { return end_ - begin_; }
  // The bytes received and not yet returned as a frame (a partial frame).
  std::string_view buffered() const {
    return std::string_view(reinterpret_cast<const char*>(buf_.data()) + begin_, end_ - begin_);
  }

 private:
  void Compact();

  const uint32_t max_frame_size_;
  std::vector<uint8_t> buf_;
  size_t begin_ = 0;  // First unconsumed byte.
  size_t end_ = 0;    // One past the last received byte.
  bool broken_ = false;
};

}  // namespace sluice

#endif  // SLUICE_SERVICE_IPC_IPC_FRAME_H_
