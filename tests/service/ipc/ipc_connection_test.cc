// Tests of service/ipc/ipc_connection.h over a socketpair, with the event
// loop driven by hand (RunUntilIdle) on the test thread: sends never block,
// a peer that does not read is dropped at the output bound, the connection
// knows whether the peer has read a frame, and the drain notification that
// paces ReadBuffers answers.
#include "service/ipc/ipc_connection.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"
#include "service/ipc/ipc_frame.h"
#include "sluice/ipc.pb.h"
#include "tests/child_process_test_util.h"

namespace sluice {
namespace {

using testing::NowMs;

class RecordingHandler : public IpcFrameHandler {
 public:
  void OnFrame(std::string_view) override { frames++; }
  void OnPeerNotReading() override { not_reading++; }
  int frames = 0;
  int not_reading = 0;
};

// A ServiceToConsumer frame with `bytes` of payload.
protos::ServiceToConsumer Payload(size_t bytes) {
  protos::ServiceToConsumer msg;
  msg.set_request_id(1);
  msg.mutable_read_buffers()->add_slices()->set_data(std::string(bytes, 'x'));
  return msg;
}

class IpcConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
    service_end_ = fds[0];
    peer_.reset(fds[1]);
  }
  void Open(size_t max_queued_output) {
    connection_ = std::make_unique<IpcConnection>(
        &loop_, ScopedFd(service_end_), max_queued_output,
        [this](const std::string& reason, bool protocol_error) {
          closed_reason_ = reason;
          closed_protocol_error_ = protocol_error;
          closed_ = true;
        });
    connection_->set_handler(&handler_);
    connection_->Start();
  }
  void TearDown() override {
    connection_.reset();
    loop_.RunUntilIdle();
  }
  // Reads everything the peer end has now; returns the byte count.
  size_t DrainPeer() {
    size_t total = 0;
    char buf[1 << 16];
    ssize_t n;
    while ((n = read(peer_.get(), buf, sizeof(buf))) > 0) total += static_cast<size_t>(n);
    return total;
  }

  EventLoop loop_;
  int service_end_ = -1;
  ScopedFd peer_;
  RecordingHandler handler_;
  std::unique_ptr<IpcConnection> connection_;
  bool closed_ = false;
  bool closed_protocol_error_ = false;
  std::string closed_reason_;
};

// Fault: the peer never reads. Lost: every frame after the kernel's socket
// buffer and the bounded queue filled; the connection is closed and says why
// (OnPeerNotReading, then on_closed's reason), and Send returned every time.
TEST_F(IpcConnectionTest, APeerThatDoesNotReadIsDroppedAtTheBoundAndSendNeverBlocks) {
  constexpr size_t kBound = 256 * 1024;
  Open(kBound);
  const protos::ServiceToConsumer frame = Payload(16 * 1024);
  size_t max_queued = 0;
  int sent = 0;
  // The socket buffer takes a few hundred KiB; far fewer than 10000 frames
  // fill it and the queue.
  while (!closed_ && sent < 10000) {
    connection_->Send(frame);
    sent++;
    max_queued = std::max(max_queued, connection_->queued_output_bytes());
    loop_.RunUntilIdle();
  }
  ASSERT_TRUE(closed_) << "sent " << sent << " frames without the connection giving up";
  EXPECT_EQ(handler_.not_reading, 1);
  EXPECT_FALSE(closed_protocol_error_);
  EXPECT_NE(closed_reason_.find("does not read its socket"), std::string::npos) << closed_reason_;
  EXPECT_LE(max_queued, kBound) << "the queue never passes its bound";
  EXPECT_GT(max_queued, 0u) << "the kernel buffer filled and the queue took over";
}

// One frame larger than the bound still goes out through an empty queue:
// a big message alone is not a sign of a peer that does not read.
TEST_F(IpcConnectionTest, OneLargeFrameFitsAnEmptyQueue) {
  Open(64 * 1024);
  connection_->Send(Payload(2u << 20));
  loop_.RunUntilIdle();
  EXPECT_FALSE(closed_);
  size_t received = 0;
  const uint64_t deadline = NowMs() + 60000;
  while (received < (2u << 20) && NowMs() < deadline) {
    received += DrainPeer();
    loop_.RunUntilIdle();
  }
  EXPECT_GE(received, 2u << 20);
  EXPECT_EQ(connection_->queued_output_bytes(), 0u);
  EXPECT_EQ(handler_.not_reading, 0);
}

TEST_F(IpcConnectionTest, PeerHasReadFollowsTheReader) {
  Open(1u << 20);
  EXPECT_TRUE(connection_->PeerHasRead(0));
  connection_->Send(Payload(100));
  EXPECT_EQ(connection_->frames_sent(), 1u);
  EXPECT_FALSE(connection_->PeerHasRead(1)) << "the frame sits unread in the kernel";
  EXPECT_GT(DrainPeer(), 100u);
  EXPECT_TRUE(connection_->PeerHasRead(1));
  connection_->Send(Payload(100));
  connection_->Send(Payload(100));
  EXPECT_TRUE(connection_->PeerHasRead(1));
  EXPECT_FALSE(connection_->PeerHasRead(3));
  DrainPeer();
  EXPECT_TRUE(connection_->PeerHasRead(3));
}

TEST_F(IpcConnectionTest, NotifyWhenOutputAtMostRunsOnceTheQueueDrained) {
  Open(64u << 20);
  // Fill the kernel buffer until output queues here.
  const protos::ServiceToConsumer frame = Payload(64 * 1024);
  for (int i = 0; i < 1000 && connection_->queued_output_bytes() == 0; i++) connection_->Send(frame);
  ASSERT_GT(connection_->queued_output_bytes(), 0u);
  int notified = 0;
  connection_->NotifyWhenOutputAtMost(0, [&] { notified++; });
  loop_.RunUntilIdle();
  EXPECT_EQ(notified, 0) << "output is still queued";
  const uint64_t deadline = NowMs() + 60000;
  while (notified == 0 && NowMs() < deadline) {
    DrainPeer();
    loop_.RunUntilIdle();
  }
  EXPECT_EQ(notified, 1);
  EXPECT_EQ(connection_->queued_output_bytes(), 0u);
  // Already drained: runs from the next task, once.
  connection_->NotifyWhenOutputAtMost(0, [&] { notified++; });
  EXPECT_EQ(notified, 1) << "not from inside the call";
  loop_.RunUntilIdle();
  EXPECT_EQ(notified, 2);
  loop_.RunUntilIdle();
  EXPECT_EQ(notified, 2);
}

// Fault: the peer sends its last frames and closes while the service still
// writes to it (the service's write fails with EPIPE). Nothing it sent is
// lost: the frames are read and handled before the connection reports the
// close. (A producer's last commits and writer registrations travel so.)
TEST_F(IpcConnectionTest, FramesSentBeforeThePeerClosedAreHandledDespiteAFailedWrite) {
  Open(1u << 20);
  connection_->Send(Payload(100));  // Unread by the peer when it closes.
  protos::ServiceToConsumer last;
  last.set_request_id(7);
  std::string bytes;
  AppendFrame(last.SerializeAsString(), &bytes);
  AppendFrame(last.SerializeAsString(), &bytes);
  ASSERT_EQ(write(peer_.get(), bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  peer_.reset();
  // The service writes before it reads: its write fails.
  connection_->Send(Payload(100));
  EXPECT_FALSE(closed_) << "not before the input is read";
  const uint64_t deadline = NowMs() + 60000;
  while (!closed_ && NowMs() < deadline) loop_.RunUntilIdle();
  EXPECT_TRUE(closed_);
  EXPECT_EQ(handler_.frames, 2);
  EXPECT_FALSE(closed_protocol_error_);
}

// The notification is dropped when the connection closes first.
TEST_F(IpcConnectionTest, NotifyIsNotRunAfterClose) {
  Open(64u << 20);
  const protos::ServiceToConsumer frame = Payload(64 * 1024);
  for (int i = 0; i < 1000 && connection_->queued_output_bytes() == 0; i++) connection_->Send(frame);
  int notified = 0;
  connection_->NotifyWhenOutputAtMost(0, [&] { notified++; });
  connection_->Close("test");
  DrainPeer();
  loop_.RunUntilIdle();
  loop_.RunUntilIdle();
  EXPECT_TRUE(closed_);
  EXPECT_EQ(notified, 0);
}

}  // namespace
}  // namespace sluice
