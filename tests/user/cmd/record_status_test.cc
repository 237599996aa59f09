// FormatRecordStatus (user/cmd/record_status.h): the figures and their
// units, and the 80-column bound for any values.
#include "user/cmd/record_status.h"

#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(RecordStatusTest, FiguresWithTheirUnits) {
  RecordStatus s;
  s.elapsed_ms = 12345;
  s.total_ms = 30000;
  s.file_bytes = 45'200'000;
  s.have_events = true;
  s.events_per_second = 120'000;
  s.buffer_fill_percent = 12.4;
  EXPECT_EQ(FormatRecordStatus(s), "12.3s/30s  45.2 MB  120k ev/s  buf 12%  lost: none");
  s.kernel_lost_pages = 3;
  s.central_lost_chunks = 12;
  EXPECT_EQ(FormatRecordStatus(s), "12.3s/30s  45.2 MB  120k ev/s  buf 12%  lost: kernel 3 pages, central 12 chunks");
  s.smb_lost_packets = 5;
  // What does not fit is counted.
  EXPECT_EQ(FormatRecordStatus(s), "12.3s/30s  45.2 MB  120k ev/s  buf 12%  lost: kernel 3 pages +2 more");
}

TEST(RecordStatusTest, DaemonAndNoDuration) {
  RecordStatus s;
  s.elapsed_ms = 500;
  s.file_bytes = 900;
  s.bpf_dropped_records = 7;
  EXPECT_EQ(FormatRecordStatus(s), "0.5s  900 B  buf 0%  lost: bpf 7 records");
}

TEST(RecordStatusTest, NeverWiderThan80Columns) {
  RecordStatus s;
  const uint64_t huge = std::numeric_limits<uint64_t>::max();
  s.elapsed_ms = huge / 2;
  s.total_ms = huge / 2;
  s.file_bytes = huge;
  s.have_events = true;
  s.events_per_second = 1e15;
  s.buffer_fill_percent = 100;
  s.kernel_lost_pages = s.bpf_dropped_records = s.smb_lost_packets = s.central_lost_chunks = huge;
  const std::string line = FormatRecordStatus(s);
  EXPECT_LE(line.size(), kStatusLineColumns) << line;
  EXPECT_TRUE(line.find(" more") != std::string::npos || line.find("sluice stats") != std::string::npos) << line;
  s.elapsed_ms = 5'400'000;  // 90 min
  EXPECT_TRUE(FormatRecordStatus(s).starts_with("90m/")) << FormatRecordStatus(s);
  s.elapsed_ms = 7'200'000;
  EXPECT_TRUE(FormatRecordStatus(s).starts_with("2h/")) << FormatRecordStatus(s);
  for (uint64_t v : {uint64_t{0}, uint64_t{999}, uint64_t{123456}, uint64_t{99'999'999'999}}) {
    s.kernel_lost_pages = s.bpf_dropped_records = s.smb_lost_packets = s.central_lost_chunks = v;
    EXPECT_LE(FormatRecordStatus(s).size(), kStatusLineColumns) << FormatRecordStatus(s);
  }
}

// The file being written is named where it fits (a killed run's data is
// there); a ring or discard session says its data is in memory.
TEST(RecordStatusTest, NamesTheFileBeingWrittenWhereItFits) {
  RecordStatus s;
  s.elapsed_ms = 2000;
  s.total_ms = 10000;
  s.file_bytes = 1'500'000;
  s.file_name = "trace.pftrace.recording-Ab12Cd";
  EXPECT_EQ(FormatRecordStatus(s), "2s/10s  1.5 MB  buf 0%  lost: none  trace.pftrace.recording-Ab12Cd");
  s.file_name = std::string(100, 'x') + ".recording-Ab12Cd";
  const std::string line = FormatRecordStatus(s);
  EXPECT_EQ(line.size(), kStatusLineColumns) << line;
  EXPECT_TRUE(line.ends_with("x.recording-Ab12Cd")) << line;
  s.kernel_lost_pages = s.bpf_dropped_records = s.smb_lost_packets = s.central_lost_chunks = 5;
  EXPECT_LE(FormatRecordStatus(s).size(), kStatusLineColumns) << FormatRecordStatus(s);
}

TEST(RecordStatusTest, InMemorySessionsSaySo) {
  RecordStatus s;
  s.elapsed_ms = 2000;
  s.in_memory = true;
  s.buffer_fill_percent = 100;
  s.central_lost_chunks = 40;
  EXPECT_EQ(FormatRecordStatus(s), "2s  in memory  buf 100%  lost: central 40 chunks");
}

TEST(RecordStatusTest, ShortCounts) {
  EXPECT_EQ(ShortCount(0), "0");
  EXPECT_EQ(ShortCount(999), "999");
  EXPECT_EQ(ShortCount(1000), "1.00k");
  EXPECT_EQ(ShortCount(45'200), "45.2k");
  EXPECT_EQ(ShortCount(999'999), "1.00M");
  EXPECT_EQ(ShortCount(3.1e9), "3.10G");
  EXPECT_EQ(ShortCount(1.8e19), ">999T");
}

}  // namespace
}  // namespace sluice
