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
#include "user/trace/trace_file_reader.h"

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

// ---- Compressed files (TraceConfig.compression) ---------------------------

// A TracePacket of about `size` random (incompressible) bytes.
std::string RandomPacket(size_t size, uint32_t seed) {
  std::string payload(size, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : payload) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x);
  }
  perfetto::protos::TracePacket p;
  p.set_synchronization_marker(payload);
  return p.SerializeAsString();
}

std::vector<std::string> ReadPackets(const std::string& bytes, TraceFileSummary* summary) {
  std::vector<std::string> got;
  Status st = ReadTraceBytes(bytes, [&](std::string_view p) { got.emplace_back(p); }, summary);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_FALSE(summary->truncated);
  return got;
}

class TraceFileWriterCompressedTest : public ::testing::TestWithParam<TraceCodec> {};

// The container stays open across writes; Flush writes it, and the file then
// holds every packet, in containers only.
TEST_P(TraceFileWriterCompressedTest, FlushWritesTheOpenContainer) {
  int fd = TempFd();
  ASSERT_GE(fd, 0);
  int keep = dup(fd);
  TraceFileWriter writer(ScopedFd(fd), 0, {GetParam(), 0});
  std::vector<std::string> packets;
  for (int i = 0; i < 100; i++) packets.push_back(Packet(100 + i));
  ASSERT_TRUE(writer.WritePackets(packets).ok());
  EXPECT_EQ(writer.bytes_written(), 0u) << "a container is written when full or flushed";
  EXPECT_EQ(ReadFd(keep), "");
  ASSERT_TRUE(writer.Flush().ok());
  EXPECT_EQ(writer.packets_written(), 100u);
  EXPECT_EQ(writer.bytes_written(), ReadFd(keep).size());
  EXPECT_TRUE(writer.Flush().ok());  // Nothing open: nothing written.
  // Enough for several containers: the full ones are written at once, and
  // the file is valid (whole containers) before the flush.
  std::vector<std::string> more;
  for (uint32_t i = 0; i < 400; i++) more.push_back(RandomPacket(3000, i));
  ASSERT_TRUE(writer.WritePackets(more).ok());
  TraceFileSummary s;
  std::vector<std::string> got = ReadPackets(ReadFd(keep), &s);
  EXPECT_GE(s.compressed_containers, 3u);
  EXPECT_EQ(got.size(), writer.packets_written());
  EXPECT_LT(got.size(), 500u);
  // The trailer flushes, in a container of its own.
  ASSERT_TRUE(writer.WritePackets({Packet(20)}, /*trailer=*/true).ok());
  got = ReadPackets(ReadFd(keep), &s);
  ASSERT_EQ(got.size(), 501u);
  EXPECT_EQ(writer.packets_written(), 501u);
  EXPECT_EQ(got.back(), Packet(20));
  packets.insert(packets.end(), more.begin(), more.end());
  packets.push_back(Packet(20));
  EXPECT_EQ(got, packets);
  // No record outside a container.
  EXPECT_EQ(s.packets, 501u);
  perfetto::protos::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(ReadFd(keep)));
  EXPECT_EQ(static_cast<uint64_t>(trace.packet_size()), s.compressed_containers);
  for (const auto& p : trace.packet()) {
    EXPECT_TRUE(GetParam() == TraceCodec::kZstd ? p.has_zstd_compressed_packets() : p.has_compressed_packets());
    EXPECT_LT(p.ByteSizeLong(), 512u * 1024);
  }
  close(keep);
}

// The cap counts the compressed bytes on disk: far more than the cap of
// compressible packets fits; incompressible ones fill it, whole containers
// only, and the trailer still fits in the reserve.
TEST_P(TraceFileWriterCompressedTest, CapCountsCompressedBytes) {
  int fd = TempFd();
  ASSERT_GE(fd, 0);
  int keep = dup(fd);
  const uint64_t cap = 4 * TraceFileWriter::kTrailerReserveBytes + 600 * 1024;
  TraceFileWriter writer(ScopedFd(fd), cap, {GetParam(), 0});
  std::vector<std::string> compressible(2000, Packet(1000));  // 2 MB before compression.
  ASSERT_TRUE(writer.WritePackets(compressible).ok());
  ASSERT_TRUE(writer.Flush().ok());
  EXPECT_FALSE(writer.full());
  EXPECT_EQ(writer.packets_written(), 2000u);
  EXPECT_LT(writer.bytes_written(), 100u * 1024);
  std::vector<std::string> random;
  for (uint32_t i = 0; i < 600; i++) random.push_back(RandomPacket(3000, i));
  ASSERT_TRUE(writer.WritePackets(random).ok());
  ASSERT_TRUE(writer.Flush().ok());
  EXPECT_TRUE(writer.full());
  EXPECT_GT(writer.packets_dropped(), 0u);
  EXPECT_EQ(writer.packets_written() + writer.packets_dropped(), 2600u);
  EXPECT_LE(writer.bytes_written(), cap - TraceFileWriter::kTrailerReserveBytes);
  const uint64_t before_trailer = writer.packets_written();
  ASSERT_TRUE(writer.WritePackets({Packet(2000)}, /*trailer=*/true).ok());
  EXPECT_EQ(writer.packets_written(), before_trailer + 1);
  EXPECT_LE(writer.bytes_written(), cap);
  const std::string file = ReadFd(keep);
  EXPECT_EQ(file.size(), writer.bytes_written());
  TraceFileSummary s;
  std::vector<std::string> got = ReadPackets(file, &s);
  EXPECT_EQ(got.size(), writer.packets_written());
  EXPECT_EQ(got.back(), Packet(2000));
  close(keep);
}

// A full disk: nothing is written; the open container's packets are lost
// with the rest, counted by their size before compression.
TEST_P(TraceFileWriterCompressedTest, DiskFullCountsTheOpenContainer) {
  int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  TraceFileWriter writer(ScopedFd(fd), 0, {GetParam(), 0});
  std::vector<std::string> packets(3, Packet(100));
  ASSERT_TRUE(writer.WritePackets(packets).ok());  // In the open container.
  Status s = writer.Flush();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no space left on device after 0 bytes (0 packets written, "
                             "the file is valid up to there); 3 packets ("),
            std::string::npos)
      << s.message();
  EXPECT_EQ(writer.packets_lost(), 3u);
  EXPECT_EQ(writer.bytes_lost(), 3 * TracePacketRecordSize(packets[0].size()));
  EXPECT_FALSE(writer.WritePackets({Packet(10)}, /*trailer=*/true).ok());
  EXPECT_EQ(writer.packets_lost(), 4u);
}

// A write stopped inside a container: the file is cut back to the last whole
// container and reads back as the packets before it.
TEST_P(TraceFileWriterCompressedTest, PartialContainerIsCutOff) {
  char path[] = "/tmp/sluice-tfw-zcut-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::vector<std::string> packets;
  for (uint32_t i = 0; i < 400; i++) packets.push_back(RandomPacket(3000, i));
  const uint64_t limit = 700 * 1024;  // Inside the second container.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {limit, limit};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(2);
    TraceFileWriter writer(ScopedFd(fd), 0, {GetParam(), 0});
    Status s = writer.WritePackets(packets);
    if (s.ok()) s = writer.Flush();
    const bool counts_add_up = writer.packets_written() + writer.packets_lost() == packets.size();
    _exit(!s.ok() && counts_add_up && writer.packets_written() > 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const std::string file = ReadFd(fd);
  EXPECT_LT(file.size(), limit);
  TraceFileSummary s;
  std::vector<std::string> got = ReadPackets(file, &s);
  EXPECT_EQ(s.compressed_containers, 1u);
  ASSERT_GT(got.size(), 0u);
  EXPECT_EQ(got, std::vector<std::string>(packets.begin(), packets.begin() + static_cast<long>(got.size())));
  close(fd);
  unlink(path);
}

INSTANTIATE_TEST_SUITE_P(Codecs, TraceFileWriterCompressedTest,
                         ::testing::Values(TraceCodec::kZstd, TraceCodec::kDeflate),
                         [](const auto& info) { return info.param == TraceCodec::kZstd ? "Zstd" : "Deflate"; });

}  // namespace
}  // namespace sluice
