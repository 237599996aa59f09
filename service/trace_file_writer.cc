#include "service/trace_file_writer.h"

#include <errno.h>
#include <unistd.h>

#include <cstring>

#include "shm/base/varint.h"

namespace sluice {
namespace {
constexpr size_t kBatchBytes = 1 << 20;
}  // namespace

TraceFileWriter::TraceFileWriter(ScopedFd fd, uint64_t max_size_bytes)
    : fd_(std::move(fd)), max_size_bytes_(max_size_bytes) {}

Status TraceFileWriter::WriteAll(const std::string& bytes) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t r = write(fd_.get(), p, left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      failed_ = true;
      return Status::Error(std::string("writing the trace file failed: ") + strerror(errno) +
                           " (check free space and the output path)");
    }
    p += r;
    left -= static_cast<size_t>(r);
  }
  return Status::Ok();
}

Status TraceFileWriter::WritePackets(const std::vector<std::string>& packets, bool trailer) {
  if (failed_) return Status::Error("the trace file had a write error earlier; later packets are lost");
  uint64_t limit = max_size_bytes_;
  if (limit != 0 && !trailer && limit >= 4 * kTrailerReserveBytes) limit -= kTrailerReserveBytes;
  batch_.clear();
  for (const std::string& packet : packets) {
    uint64_t record = TracePacketRecordSize(packet.size());
    if ((full_ && !trailer) || (limit != 0 && bytes_written_ + batch_.size() + record > limit)) {
      full_ = true;
      packets_dropped_++;
      continue;
    }
    AppendTracePacketRecord(packet, &batch_);
    packets_written_++;
    if (batch_.size() >= kBatchBytes) {
      SLUICE_RETURN_IF_ERROR(WriteAll(batch_));
      bytes_written_ += batch_.size();
      batch_.clear();
    }
  }
  if (!batch_.empty()) {
    SLUICE_RETURN_IF_ERROR(WriteAll(batch_));
    bytes_written_ += batch_.size();
    batch_.clear();
  }
  return Status::Ok();
}

}  // namespace sluice
