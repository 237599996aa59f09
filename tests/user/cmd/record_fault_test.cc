// Tests of user/cmd/record_fault.h without a kernel: cutting a partial packet
// off a trace file through its write-only fd, leaving anything that is not a
// trace alone, and the line `sluice record` prints for each kind of fault.
#include "user/cmd/record_fault.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "service/trace_file_writer.h"
#include "shm/base/varint.h"

namespace sluice {
namespace {

class RecordFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/sluice-record-fault-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = path;
  }
  void TearDown() override { unlink(path_.c_str()); }

  // Writes `bytes` to the file and opens it write-only, as `sluice record`
  // holds its output.
  int WriteAndOpen(const std::string& bytes) {
    int fd = open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    return fd;
  }
  uint64_t FileSize() const {
    struct stat st {};
    EXPECT_EQ(stat(path_.c_str(), &st), 0);
    return static_cast<uint64_t>(st.st_size);
  }

  std::string path_;
};

// Three whole records (TracePacket.timestamp = i, 2 bytes each).
std::string ThreeRecords() {
  std::string records;
  for (char i = 1; i <= 3; i++) AppendTracePacketRecord(std::string("\x40", 1) + i, &records);
  return records;
}

TEST_F(RecordFaultTest, PartialPacketIsCutOff) {
  const std::string whole = ThreeRecords();
  // A writer killed in the middle of a 300-byte packet: tag, length, 100 bytes.
  std::string partial;
  AppendTracePacketRecord(std::string(300, 'x'), &partial);
  partial.resize(103);
  int fd = WriteAndOpen(whole + partial);
  RecordFileState state = CutToLastWholePacket(fd);
  close(fd);
  ASSERT_TRUE(state.checked.ok()) << state.checked.message();
  EXPECT_EQ(state.cut_bytes, 103u);
  EXPECT_EQ(state.summary.packets, 3u);
  EXPECT_EQ(state.summary.bytes, whole.size());
  EXPECT_FALSE(state.summary.truncated);
  EXPECT_EQ(FileSize(), whole.size());
}

TEST_F(RecordFaultTest, WholeFileIsLeftAsItIs) {
  const std::string whole = ThreeRecords();
  int fd = WriteAndOpen(whole);
  RecordFileState state = CutToLastWholePacket(fd);
  close(fd);
  ASSERT_TRUE(state.checked.ok()) << state.checked.message();
  EXPECT_EQ(state.cut_bytes, 0u);
  EXPECT_EQ(state.summary.packets, 3u);
  EXPECT_EQ(FileSize(), whole.size());
}

TEST_F(RecordFaultTest, FileThatIsNotATraceIsNotTouched) {
  const std::string text = "this is not a trace, and it ends in the middle of noth";
  int fd = WriteAndOpen(text);
  RecordFileState state = CutToLastWholePacket(fd);
  close(fd);
  EXPECT_FALSE(state.checked.ok());
  EXPECT_EQ(FileSize(), text.size());
}

TEST_F(RecordFaultTest, FileErrorGetsTheFileName) {
  const std::string error =
      std::string(kTraceFileErrorPrefix) +
      "no space left on device after 524288 bytes (6 packets written, the file is valid up to "
      "there); 3 packets (1000 bytes) after that were not written; free space there or write the "
      "trace elsewhere";
  EXPECT_EQ(DescribeSessionFault("/mnt/small/t.pftrace", error, false, RecordFileState{}),
            "/mnt/small/t.pftrace: no space left on device after 524288 bytes (6 packets written, "
            "the file is valid up to there); 3 packets (1000 bytes) after that were not written; "
            "free space there or write the trace elsewhere");
}

TEST_F(RecordFaultTest, LostServiceSaysWhatTheFileHolds) {
  RecordFileState file;
  file.summary.bytes = 4096;
  file.summary.packets = 12;
  file.cut_bytes = 100;
  EXPECT_EQ(DescribeSessionFault("t.pftrace",
                                 "lost the connection to sluiced (it exited or was killed)", true,
                                 file),
            "lost the connection to sluiced (it exited or was killed) during the session; "
            "t.pftrace is valid up to its last whole packet: 4096 bytes, 12 packets (the 100 "
            "bytes of a partial packet were cut off); what sluiced had not written yet is lost; "
            "see its log (journalctl -u sluiced) and start it again");
  file.checked = Status::Error("byte 0 is not a Trace.packet record");
  EXPECT_NE(DescribeSessionFault("t.pftrace", "x", true, file)
                .find("t.pftrace: byte 0 is not a Trace.packet record"),
            std::string::npos);
}

TEST_F(RecordFaultTest, OtherErrorsSayWhatTheFileHolds) {
  RecordFileState file;
  file.summary.bytes = 10;
  file.summary.packets = 1;
  EXPECT_EQ(DescribeSessionFault("t.pftrace", "something broke", false, file),
            "the session ended on an error: something broke; t.pftrace is valid up to its last "
            "whole packet: 10 bytes, 1 packet");
}

}  // namespace
}  // namespace sluice
