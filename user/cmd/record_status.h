// The live status line `sluice record` draws on a terminal, once a second:
//
//   12.3s/30s  45.2 MB  120k ev/s  buf 12%  lost: none
//   12.3s/30s  45.2 MB  120k ev/s  buf 99%  lost: kernel 3 pages, central 12 chunks
//   12.3s/30s  in memory  120k ev/s  buf 100%  lost: none
//
// elapsed/total time (total: the config's duration, left out when it has
// none), the trace file's size so far, the event rate (from the in-process
// probes; --daemon has no event figures), how full the central buffers are,
// and each loss that is not zero with its unit: kernel ring buffer pages
// lost, BPF ring records dropped, packets lost in shared memory, central
// buffer chunks overwritten or discarded; then, where it fits, the name of
// the file being written (a killed run's data is there; record_output.h).
// A ring or discard session holds its data in memory until the end: "in
// memory" stands for the file size. It never exceeds 80 columns:
// numbers are shortened (k, M, G) and losses that do not fit are counted
// ("+2 more"); `sluice stats` has them all after the run.
#ifndef SLUICE_USER_CMD_RECORD_STATUS_H_
#define SLUICE_USER_CMD_RECORD_STATUS_H_

#include <cstdint>
#include <optional>
#include <string>

namespace sluice {

struct RecordStatus {
  uint64_t elapsed_ms = 0;
  uint64_t total_ms = 0;  // 0: no duration
  uint64_t file_bytes = 0;
  bool in_memory = false;  // Ring or discard: nothing is written until the end.
  std::string file_name;   // The file being written (its base name); may be empty.
  bool have_events = false;  // false with --daemon
  double events_per_second = 0;
  double buffer_fill_percent = 0;
  uint64_t kernel_lost_pages = 0;
  uint64_t bpf_dropped_records = 0;
  uint64_t smb_lost_packets = 0;
  uint64_t central_lost_chunks = 0;
};

inline constexpr size_t kStatusLineColumns = 80;

// The line, without "\r" or padding: at most kStatusLineColumns characters.
std::string FormatRecordStatus(const RecordStatus& status);

// 999, 1.20k, 45.2k, 1.52M, 3.10G, >999T: at most 5 characters.
std::string ShortCount(double value);

}  // namespace sluice

#endif  // SLUICE_USER_CMD_RECORD_STATUS_H_
