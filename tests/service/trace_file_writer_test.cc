#include "service/trace_file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include "gtest/gtest.h"
#include "perfetto/trace/trace.pb.h"
#include "perfetto/trace/trace_packet.pb.h"

namespace sluice {
namespace {

std::string ReadFd(int fd) {
  std::string out;
  char buf[4096];
  lseek(fd, 0, SEEK_SET);
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

// A valid TracePacket of about `size` bytes.
std::string Packet(size_t size) {
  perfetto::protos::TracePacket p;
  p.set_synchronization_marker(std::string(size, 's'));
  return p.SerializeAsString();
}

int TempFd() {
  char path[] = "/tmp/sluice-tfw-XXXXXX";
  int fd = mkstemp(path);
  unlink(path);
  return fd;
}

TEST(TraceFileWriterTest, RecordsParseAsATrace) {
  int fd = TempFd();
  ASSERT_GE(fd, 0);
  int keep = dup(fd);
  TraceFileWriter writer(ScopedFd(fd), 0);
  std::vector<std::string> packets = {"", Packet(300), std::string("\x40\x07", 2)};
  ASSERT_TRUE(writer.WritePackets(packets).ok());
  perfetto::protos::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(ReadFd(keep)));
  ASSERT_EQ(trace.packet_size(), 3);
  EXPECT_EQ(trace.packet(2).timestamp(), 7u);
  EXPECT_EQ(writer.packets_written(), 3u);
  close(keep);
}

TEST(TraceFileWriterTest, LongRecordHeader) {
  std::string out;
  AppendTracePacketRecord(std::string(200, 'a'), &out);
  EXPECT_EQ(out.size(), 1 + 2 + 200u);
  EXPECT_EQ(static_cast<uint8_t>(out[0]), 0x0a);
  EXPECT_EQ(static_cast<uint8_t>(out[1]), 0xc8);
  EXPECT_EQ(static_cast<uint8_t>(out[2]), 0x01);
}

TEST(TraceFileWriterTest, CapKeepsWholeRecordsAndRoomForTheTrailer) {
  int fd = TempFd();
  int keep = dup(fd);
  const uint64_t cap = 4 * TraceFileWriter::kTrailerReserveBytes + 1000;
  TraceFileWriter writer(ScopedFd(fd), cap);
  std::vector<std::string> packets(200, Packet(1000));
  ASSERT_TRUE(writer.WritePackets(packets).ok());
  EXPECT_TRUE(writer.full());
  EXPECT_LE(writer.bytes_written(), cap - TraceFileWriter::kTrailerReserveBytes);
  EXPECT_GT(writer.packets_dropped(), 0u);
  // Data stays refused; the trailer fits in the reserve.
  ASSERT_TRUE(writer.WritePackets({Packet(10)}).ok());
  uint64_t before = writer.packets_written();
  ASSERT_TRUE(writer.WritePackets({Packet(5000)}, /*trailer=*/true).ok());
  EXPECT_EQ(writer.packets_written(), before + 1);
  EXPECT_LE(writer.bytes_written(), cap);
  perfetto::protos::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(ReadFd(keep)));
  close(keep);
}

TEST(TraceFileWriterTest, WriteErrorIsReported) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  close(fds[0]);  // Writing gets EPIPE (SIGPIPE is ignored by gtest? make sure).
  signal(SIGPIPE, SIG_IGN);
  TraceFileWriter writer(ScopedFd(fds[1]), 0);
  EXPECT_FALSE(writer.WritePackets({"abc"}).ok());
  EXPECT_FALSE(writer.WritePackets({"abc"}).ok());
}

}  // namespace
}  // namespace sluice
