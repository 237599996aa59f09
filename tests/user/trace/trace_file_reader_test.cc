#include "user/trace/trace_file_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <zstd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "perfetto/trace/trace_packet.pb.h"

namespace sluice {
namespace {

using perfetto::protos::TracePacket;

std::string Packet(uint64_t timestamp) {
  TracePacket p;
  p.set_timestamp(timestamp);
  return p.SerializeAsString();
}

std::string Records(const std::vector<std::string>& packets) {
  std::string out;
  for (const auto& p : packets) AppendTracePacketRecord(p, &out);
  return out;
}

std::vector<std::string> ReadAll(std::string_view bytes, TraceFileSummary* summary, Status* status) {
  std::vector<std::string> got;
  *status = ReadTraceBytes(bytes, [&](std::string_view p) { got.emplace_back(p); }, summary);
  return got;
}

TEST(TraceFileReaderTest, ReadsEveryPacketInOrder) {
  std::vector<std::string> packets = {Packet(1), Packet(2), std::string(300, 'x'), ""};
  std::string bytes = Records(packets);
  TraceFileSummary s;
  Status st;
  EXPECT_EQ(ReadAll(bytes, &s, &st), packets);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(s.packets, 4u);
  EXPECT_EQ(s.bytes, bytes.size());
  EXPECT_EQ(s.valid_bytes, bytes.size());
  EXPECT_FALSE(s.truncated);
}

// A recorder killed mid-write leaves a partial record: everything before it
// is returned and the cut is reported, for every possible cut point.
TEST(TraceFileReaderTest, TruncatedTailIsReportedNotFatal) {
  std::string first = Records({Packet(1)});
  std::string bytes = first + Records({std::string(200, 'y')});
  for (size_t cut = first.size() + 1; cut < bytes.size(); cut++) {
    TraceFileSummary s;
    Status st;
    auto got = ReadAll(std::string_view(bytes).substr(0, cut), &s, &st);
    ASSERT_TRUE(st.ok()) << "cut " << cut << ": " << st.message();
    EXPECT_TRUE(s.truncated) << cut;
    EXPECT_EQ(s.valid_bytes, first.size()) << cut;
    EXPECT_EQ(got.size(), 1u) << cut;
  }
}

TEST(TraceFileReaderTest, NotATraceNamesTheByte) {
  std::string bytes = Records({Packet(1)}) + "\x12garbage";
  TraceFileSummary s;
  Status st;
  ReadAll(bytes, &s, &st);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("not a Trace.packet record (tag 0x12)"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("byte " + std::to_string(Records({Packet(1)}).size())), std::string::npos);
}

TEST(TraceFileReaderTest, CompressedContainersInflateInOrder) {
  std::vector<std::string> inner = {Packet(10), Packet(11), Packet(12)};
  auto container = CompressPacketRecords(Records(inner));
  ASSERT_TRUE(container.ok()) << container.status().message();
  std::string bytes = Records({Packet(1)}) + *container + Records({Packet(2)});
  TraceFileSummary s;
  Status st;
  auto got = ReadAll(bytes, &s, &st);
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<std::string> want = {Packet(1), Packet(10), Packet(11), Packet(12), Packet(2)};
  EXPECT_EQ(got, want);
  EXPECT_EQ(s.compressed_containers, 1u);
  EXPECT_EQ(s.packets, 5u);
}

TEST(TraceFileReaderTest, BadCompressedContainersFailWithTheCause) {
  auto container_of = [](const std::string& payload) {
    TracePacket p;
    p.set_compressed_packets(payload);
    return Records({p.SerializeAsString()});
  };
  // Not zlib.
  TraceFileSummary s;
  Status st;
  ReadAll(container_of("not zlib at all"), &s, &st);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("do not inflate"), std::string::npos) << st.message();
  // A container inside a container.
  auto inner = CompressPacketRecords(Records({Packet(1)}));
  ASSERT_TRUE(inner.ok());
  auto nested = CompressPacketRecords(*inner);
  ASSERT_TRUE(nested.ok());
  ReadAll(*nested, &s, &st);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("nested compressed_packets"), std::string::npos) << st.message();
  // Inflates to a cut-off record.
  std::string cut = Records({std::string(100, 'z')});
  cut.resize(cut.size() - 10);
  auto cut_container = CompressPacketRecords(cut);
  ASSERT_TRUE(cut_container.ok());
  ReadAll(*cut_container, &s, &st);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cut-off packet"), std::string::npos) << st.message();
}

// A zstd_compressed_packets container holding `frame` as is.
std::string ZstdContainer(const std::string& frame) {
  TracePacket p;
  p.set_zstd_compressed_packets(frame);
  return Records({p.SerializeAsString()});
}

// One zstd frame of `bytes`.
std::string ZstdFrame(std::string_view bytes, int level = 3) {
  std::string out(ZSTD_compressBound(bytes.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), level);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

TEST(TraceFileReaderTest, ZstdContainersDecompressInOrder) {
  std::vector<std::string> inner = {Packet(10), Packet(11), std::string(5000, 'q'), Packet(12)};
  std::string bytes = Records({Packet(1)}) + ZstdContainer(ZstdFrame(Records(inner))) + Records({Packet(2)}) +
                      *CompressPacketRecords(Records({Packet(3)}));  // Mixed with deflate: read too.
  TraceFileSummary s;
  Status st;
  auto got = ReadAll(bytes, &s, &st);
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<std::string> want = {Packet(1), Packet(10), Packet(11), std::string(5000, 'q'), Packet(12),
                                   Packet(2), Packet(3)};
  EXPECT_EQ(got, want);
  EXPECT_EQ(s.compressed_containers, 2u);
  EXPECT_EQ(s.packets, 7u);
  EXPECT_FALSE(s.truncated);
}

TEST(TraceFileReaderTest, BadZstdContainersFailWithTheCause) {
  auto fails_with = [](const std::string& bytes, const std::string& cause) {
    TraceFileSummary s;
    Status st;
    ReadAll(bytes, &s, &st);
    ASSERT_FALSE(st.ok()) << cause;
    EXPECT_NE(st.message().find(cause), std::string::npos) << st.message();
  };
  const std::string records = Records({Packet(1), std::string(3000, 'r'), Packet(2)});
  const std::string frame = ZstdFrame(records);
  // Not zstd.
  fails_with(ZstdContainer("not a zstd frame"), "zstd_compressed_packets do not decompress (zstd: ");
  // A frame cut off: its bytes end before the frame does.
  for (size_t cut : {frame.size() - 1, frame.size() / 2, size_t{6}})
    fails_with(ZstdContainer(frame.substr(0, cut)), "zstd_compressed_packets are cut off");
  // A damaged frame (a byte of its compressed block flipped), with the
  // checksum sluice writes: the checksum catches it.
  {
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ASSERT_FALSE(ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)));
    const std::string input = records + std::string(2000, 'x') + records;
    std::string damaged(ZSTD_compressBound(input.size()), '\0');
    const size_t n = ZSTD_compress2(cctx, damaged.data(), damaged.size(), input.data(), input.size());
    ZSTD_freeCCtx(cctx);
    ASSERT_FALSE(ZSTD_isError(n));
    damaged.resize(n);
    damaged[damaged.size() / 2] ^= 0x55;
    fails_with(ZstdContainer(damaged), "zstd_compressed_packets do not decompress (zstd: ");
  }
  // Two frames in one container, or bytes after the frame.
  fails_with(ZstdContainer(frame + frame), "bytes after their zstd frame");
  fails_with(ZstdContainer(frame + "xy"), "2 bytes after their zstd frame");
  // A container inside a container.
  fails_with(ZstdContainer(ZstdFrame(ZstdContainer(frame))), "nested zstd_compressed_packets");
  fails_with(ZstdContainer(ZstdFrame(*CompressPacketRecords(records))), "nested compressed_packets");
  // Decompresses to a cut-off record.
  std::string cut_records = records.substr(0, records.size() - 5);
  fails_with(ZstdContainer(ZstdFrame(cut_records)), "cut-off packet");
}

// More than 256 MiB once decompressed: refused, not held.
TEST(TraceFileReaderTest, ZstdContainerOverTheLimitIsRefused) {
  // 257 MiB of zeros compress to a few KiB; fed in pieces.
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ASSERT_NE(cctx, nullptr);
  std::string zeros(1 << 20, '\0');
  std::string frame(1 << 20, '\0');
  ZSTD_outBuffer out{frame.data(), frame.size(), 0};
  for (int i = 0; i < 257; i++) {
    ZSTD_inBuffer in{zeros.data(), zeros.size(), 0};
    while (in.pos < in.size) ASSERT_FALSE(ZSTD_isError(ZSTD_compressStream2(cctx, &out, &in, ZSTD_e_continue)));
  }
  ZSTD_inBuffer none{nullptr, 0, 0};
  while (ZSTD_compressStream2(cctx, &out, &none, ZSTD_e_end) != 0) {
  }
  ZSTD_freeCCtx(cctx);
  frame.resize(out.pos);
  TraceFileSummary s;
  Status st;
  ReadAll(ZstdContainer(frame), &s, &st);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("decompress to more than 256 MiB"), std::string::npos) << st.message();
}

class TraceFileReaderFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-trace-reader-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string Write(const std::string& name, const std::string& bytes) {
    std::string path = dir_ + "/" + name;
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    close(fd);
    return path;
  }
  std::string dir_;
};

TEST_F(TraceFileReaderFileTest, ReadsAFile) {
  // Larger than one read(2) of a pipe-sized buffer, to cover the loop.
  std::vector<std::string> packets;
  for (int i = 0; i < 5000; i++) packets.push_back(Packet(static_cast<uint64_t>(i)) + std::string(40, 'p'));
  std::string bytes = Records(packets);
  std::string path = Write("t.pftrace", bytes);
  TraceFileSummary s;
  uint64_t n = 0;
  Status st = ReadTraceFile(path, [&](std::string_view p) { EXPECT_EQ(p, packets[n++]); }, &s);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(n, packets.size());
  EXPECT_EQ(s.bytes, bytes.size());
}

// The reader takes a file in windows far smaller than a trace: records cut
// by a window's end, and records larger than a window (up to 3 MiB here),
// come out whole and in order, with every byte.
TEST_F(TraceFileReaderFileTest, RecordsAcrossAndLargerThanTheReadWindowComeOutWhole) {
  std::vector<std::string> packets;
  const size_t sizes[] = {1, 4000, 70000, 300000, 1u << 20, 3u << 20, 5, 250000, 123457};
  for (int lap = 0; lap < 3; lap++)
    for (size_t size : sizes) packets.push_back(std::string(size, static_cast<char>('a' + packets.size() % 26)));
  std::string bytes = Records(packets);
  std::string path = Write("windows.pftrace", bytes);
  TraceFileSummary s;
  uint64_t n = 0;
  Status st = ReadTraceFile(
      path,
      [&](std::string_view p) {
        ASSERT_LT(n, packets.size());
        EXPECT_TRUE(p == packets[n]) << "packet " << n << ": " << p.size() << " bytes, " << packets[n].size()
                                     << " expected";
        n++;
      },
      &s);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(n, packets.size());
  EXPECT_EQ(s.bytes, bytes.size());
  EXPECT_EQ(s.valid_bytes, bytes.size());
  EXPECT_FALSE(s.truncated);
}

TEST_F(TraceFileReaderFileTest, EmptyFileHasNoPackets) {
  TraceFileSummary s;
  Status st = ReadTraceFile(Write("empty", ""), [](std::string_view) { ADD_FAILURE(); }, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(s.packets, 0u);
}

TEST_F(TraceFileReaderFileTest, MissingFileAndDirectoryAreOneLineErrors) {
  TraceFileSummary s;
  Status st = ReadTraceFile(dir_ + "/nope", [](std::string_view) {}, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot open trace file " + dir_ + "/nope"), std::string::npos) << st.message();
  st = ReadTraceFile(dir_, [](std::string_view) {}, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot read trace file"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find('\n'), std::string::npos);
}

// A record that claims 4 GiB at the start of a 6 GiB sparse file: the reader
// gives up at its record bound (memory stays bounded), says the file is valid
// up to byte 0, and reports the file's real size.
TEST_F(TraceFileReaderFileTest, CorruptHugeRecordInASparseFileIsBoundedAndSaysSo) {
  const std::string path = Write("sparse", std::string("\x0a\xff\xff\xff\xff\x0f", 6));
  ASSERT_EQ(truncate(path.c_str(), 6ll << 30), 0);
  TraceFileSummary s;
  Status st = ReadTraceFile(path, [](std::string_view) { ADD_FAILURE(); }, &s);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(s.packets, 0u);
  EXPECT_EQ(s.bytes, 6ull << 30);
  EXPECT_EQ(s.valid_bytes, 0u);
  EXPECT_TRUE(s.truncated);
}

TEST_F(TraceFileReaderFileTest, ErrorsNameTheFile) {
  std::string path = Write("bad", "\x12junk");
  TraceFileSummary s;
  Status st = ReadTraceFile(path, [](std::string_view) {}, &s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().rfind(path + ": ", 0), 0u) << st.message();
}

}  // namespace
}  // namespace sluice
