#include "service/trace_file_writer.h"

#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "shm/base/errno_message.h"
#include "shm/base/string_util.h"
#include "shm/base/varint.h"

namespace sluice {
namespace {

constexpr size_t kBatchBytes = 1 << 20;

// What to do about a failed write, by errno.
const char* WriteErrorHint(int err) {
  switch (err) {
    case ENOSPC:
      return "free space there or write the trace elsewhere";
    case EDQUOT:
      return "raise the disk quota or write the trace elsewhere";
    case EFBIG:
      return "the filesystem (or RLIMIT_FSIZE) allows no larger file; set max_file_size_bytes "
             "or write the trace elsewhere";
    case EIO:
      return "the device failed the write; check it (dmesg) or write the trace elsewhere";
    default:
      return "check the output file and its filesystem";
  }
}

}  // namespace

TraceFileWriter::TraceFileWriter(ScopedFd fd, uint64_t max_size_bytes)
    : fd_(std::move(fd)), max_size_bytes_(max_size_bytes) {}

Status TraceFileWriter::WriteBatch() {
  size_t done = 0;
  while (done < batch_.size()) {
    ssize_t r = write(fd_.get(), batch_.data() + done, batch_.size() - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      write_errno_ = r < 0 ? errno : EIO;  // 0 bytes for a non-empty write: treat as EIO.
      break;
    }
    done += static_cast<size_t>(r);
  }
  // Records wholly written before an error stay in the file.
  const size_t whole = static_cast<size_t>(
      std::upper_bound(record_ends_.begin(), record_ends_.end(), done) - record_ends_.begin());
  const size_t keep = whole ? record_ends_[whole - 1] : 0;
  bytes_written_ += keep;
  packets_written_ += whole;
  if (failed()) {
    packets_lost_ += record_ends_.size() - whole;
    bytes_lost_ += batch_.size() - keep;
    if (done > keep) {
      // The file ends inside a record: cut it back to the record boundary.
      // The position is just past the partial bytes (also with O_APPEND).
      const off_t end = lseek(fd_.get(), 0, SEEK_CUR);
      const off_t boundary = end - static_cast<off_t>(done - keep);
      if (end < 0 || ftruncate(fd_.get(), boundary) != 0 ||
          lseek(fd_.get(), boundary, SEEK_SET) < 0) {
        cut_errno_ = errno;
        partial_bytes_left_ = done - keep;
      }
    }
  }
  batch_.clear();
  record_ends_.clear();
  return failed() ? Status::Error(FailureMessage()) : Status::Ok();
}

void TraceFileWriter::CountLost(const std::vector<std::string>& packets, size_t from) {
  for (size_t i = from; i < packets.size(); i++) {
    packets_lost_++;
    bytes_lost_ += TracePacketRecordSize(packets[i].size());
  }
}

Status TraceFileWriter::WritePackets(const std::vector<std::string>& packets, bool trailer) {
  if (failed()) {
    CountLost(packets, 0);
    return Status::Error(FailureMessage());
  }
  uint64_t limit = max_size_bytes_;
  if (limit != 0 && !trailer && limit >= 4 * kTrailerReserveBytes) limit -= kTrailerReserveBytes;
  batch_.clear();
  record_ends_.clear();
  for (size_t i = 0; i < packets.size(); i++) {
    const std::string& packet = packets[i];
    uint64_t record = TracePacketRecordSize(packet.size());
    if ((full_ && !trailer) || (limit != 0 && bytes_written_ + batch_.size() + record > limit)) {
      full_ = true;
      packets_dropped_++;
      continue;
    }
    AppendTracePacketRecord(packet, &batch_);
    record_ends_.push_back(batch_.size());
    if (batch_.size() >= kBatchBytes) {
      Status s = WriteBatch();
      if (!s.ok()) {
        CountLost(packets, i + 1);
        return Status::Error(FailureMessage());
      }
    }
  }
  if (!batch_.empty()) return WriteBatch();
  return Status::Ok();
}

std::string TraceFileWriter::FailureMessage() const {
  if (!failed()) return "";
  std::string cause = ErrnoMessage(write_errno_);
  if (!cause.empty()) cause[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(cause[0])));
  std::string m(kTraceFileErrorPrefix);
  m += cause + " after " + CountOf(bytes_written_, "byte") + " (" +
       CountOf(packets_written_, "packet") + " written, the file is valid up to there)";
  if (partial_bytes_left_) {
    m += "; " + std::to_string(partial_bytes_left_) +
         " bytes of a partial packet follow (cutting them off failed: " +
         ErrnoMessage(cut_errno_) + ")";
  }
  if (packets_lost_) {
    m += "; " + CountOf(packets_lost_, "packet") + " (" + CountOf(bytes_lost_, "byte") +
         ") after that " + (packets_lost_ == 1 ? "was" : "were") + " not written";
  }
  m += "; ";
  m += WriteErrorHint(write_errno_);
  return m;
}

}  // namespace sluice
