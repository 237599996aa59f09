#include "service/trace_file_writer.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string_view>

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
  EXPECT_EQ(writer.packets_lost(), 2u);
}

// /dev/full fails every write with ENOSPC, as a full disk does: nothing is
// written, every packet is counted as lost, and the message says so.
TEST(TraceFileWriterTest, DiskFullIsOneLineWithWhatWasLost) {
  int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  TraceFileWriter writer(ScopedFd(fd), 0);
  std::vector<std::string> packets(3, Packet(100));
  Status s = writer.WritePackets(packets);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(writer.failed());
  EXPECT_EQ(s.message(), writer.FailureMessage());
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
  EXPECT_EQ(s.message().rfind(kTraceFileErrorPrefix, 0), 0u) << s.message();
  EXPECT_NE(s.message().find("no space left on device after 0 bytes (0 packets written, "
                             "the file is valid up to there); 3 packets ("),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("free space there or write the trace elsewhere"), std::string::npos)
      << s.message();
  EXPECT_EQ(writer.packets_written(), 0u);
  EXPECT_EQ(writer.packets_lost(), 3u);
  EXPECT_EQ(writer.bytes_lost(), 3 * TracePacketRecordSize(packets[0].size()));
  // Later packets (the trailer too) are refused and counted.
  EXPECT_FALSE(writer.WritePackets({Packet(10)}, /*trailer=*/true).ok());
  EXPECT_EQ(writer.packets_lost(), 4u);
}

// A write that stops in the middle of a record (the disk filled during it)
// leaves the file cut back to its last whole record. RLIMIT_FSIZE makes
// write(2) stop at an exact byte (then fail with EFBIG); it is set in a
// child process so that nothing else of this test binary is limited.
TEST(TraceFileWriterTest, PartialRecordIsCutOffAfterAWriteError) {
  char path[] = "/tmp/sluice-tfw-cut-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::vector<std::string> packets(10, Packet(3000));
  const uint64_t record = TracePacketRecordSize(packets[0].size());
  const uint64_t limit = 3 * record + 1000;  // Inside the fourth record.
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {limit, limit};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(2);
    TraceFileWriter writer(ScopedFd(fd), 0);
    Status s = writer.WritePackets(packets);
    std::string out = std::to_string(writer.bytes_written()) + " " +
                      std::to_string(writer.packets_written()) + " " +
                      std::to_string(writer.packets_lost()) + " " + s.message();
    (void)!write(report[1], out.data(), out.size());
    _exit(s.ok() ? 1 : 0);
  }
  close(report[1]);
  std::string out;
  char buf[1024];
  ssize_t n;
  while ((n = read(report[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(report[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << " " << out;
  const std::string expect_counts =
      std::to_string(3 * record) + " 3 7 " + std::string(kTraceFileErrorPrefix) +
      "file too large after " + std::to_string(3 * record) + " bytes (3 packets written";
  EXPECT_EQ(out.rfind(expect_counts, 0), 0u) << out;
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), 3 * record) << "the partial record was not cut off";
  perfetto::protos::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(ReadFd(fd)));
  EXPECT_EQ(trace.packet_size(), 3);
  close(fd);
  unlink(path);
}

}  // namespace
}  // namespace sluice
